import {BaseCommand} from './_shared/base-command.js'

export default class Version extends BaseCommand {
  static override description = 'Show the version of leads, its platform and Node.js (as -v and --version)'
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json']

  async run(): Promise<{version: string; platform: string; arch: string; node: string}> {
    await this.parse(Version)
    if (!this.jsonEnabled()) this.log(this.config.userAgent)
    return {version: this.config.version, platform: this.config.platform, arch: this.config.arch, node: process.version}
  }
}
