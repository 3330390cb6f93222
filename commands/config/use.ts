import {Args} from '@oclif/core'

import {ProfileStore} from '../../src/client/client-settings.js'
import {BaseCommand} from '../_shared/base-command.js'

export default class ConfigUse extends BaseCommand {
  static override description = 'Make a profile the current one: used when neither --profile nor LEADS_PROFILE names one'
  static override examples = ['<%= config.bin %> config use acme', '<%= config.bin %> config use default']
  static override args = {
    profile: Args.string({description: 'an existing profile, or default', required: true}),
  }

  async run(): Promise<{current: string}> {
    const {args} = await this.parse(ConfigUse)
    ProfileStore.in(this.config.configDir).use(args.profile)
    this.log(`Now using profile ${args.profile} (--profile and LEADS_PROFILE still win).`)
    return {current: args.profile}
  }
}
