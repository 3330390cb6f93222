import {Args} from '@oclif/core'

import {ProfileStore, SETTING_NAMES, type SettingName, shownSetting} from '../../src/client/client-settings.js'
import {AppError} from '../../src/shared/errors.js'
import {BaseCommand, profileFlags} from '../_shared/base-command.js'

export default class ConfigSet extends BaseCommand {
  static override description = `Keep a client setting (base-url, token, customer) in a profile, for pull and push; the file is readable by you only

Give the value as an argument, or as - to read it from stdin; without one, it is asked for at a terminal (a token without showing it). A token given as an argument stays in the shell's history and shows in the process list: prefer - or the prompt.`
  static override examples = [
    '<%= config.bin %> config set base-url https://leads.example.com',
    '<%= config.bin %> config set customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --profile acme',
    '<%= config.bin %> config set token',
    'printenv ACME_TOKEN | <%= config.bin %> config set token - --profile acme',
  ]
  static override args = {
    name: Args.string({description: 'setting', options: [...SETTING_NAMES], required: true}),
    value: Args.string({description: 'its value; - reads it from stdin; none: asked for at a terminal'}),
  }
  static override flags = {...profileFlags}

  async run(): Promise<{profile: string; name: SettingName; value: string}> {
    const {args, flags} = await this.parse(ConfigSet)
    const name = args.name as SettingName
    const profile = this.profileInForce(flags.profile)
    const raw = await this.readValue(name, args.value)
    ProfileStore.in(this.config.configDir).set(profile, name, raw)
    const value = shownSetting(name, raw.trim())
    this.log(`Set ${name} = ${value} in profile ${profile}.`)
    return {profile, name, value}
  }

  /** The value from the argument, stdin (-) or a prompt at a terminal (hidden for a token). */
  private async readValue(name: SettingName, argument: string | undefined): Promise<string> {
    const {askHidden, readAllStdin} = await import('../../src/ui/hidden-prompt.js')
    if (argument === '-') return (await readAllStdin()).split('\n')[0]!.trim()
    if (argument !== undefined) return argument
    if (!process.stdin.isTTY) {
      throw new AppError('invalid_request_error', 400, `no value given for ${name}`, `give it as an argument, or pipe it in: … | leads config set ${name} -`)
    }
    if (name === 'token') return askHidden('API token (not shown): ')
    const {createInterface} = await import('node:readline/promises')
    const prompt = createInterface({input: process.stdin, output: process.stderr})
    try {
      return await prompt.question(`${name}: `)
    } finally {
      prompt.close()
    }
  }
}
