import {Args, Flags} from '@oclif/core'

import {DEFAULT_PROFILE, ProfileStore, SETTING_NAMES, type SettingName, shownSetting} from '../../src/client/client-settings.js'
import {BaseCommand} from '../_shared/base-command.js'

export default class ConfigSet extends BaseCommand {
  static override description = 'Keep a client setting (base-url, token, customer) in a profile, for pull and push; the file is readable by you only'
  static override examples = [
    '<%= config.bin %> config set base-url https://leads.example.com',
    '<%= config.bin %> config set customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --profile acme',
    'printenv ACME_TOKEN | xargs <%= config.bin %> config set token --profile acme',
  ]
  static override args = {
    name: Args.string({description: 'setting', options: [...SETTING_NAMES], required: true}),
    value: Args.string({description: 'its value', required: true}),
  }
  static override flags = {
    profile: Flags.string({description: 'profile to keep it in', default: DEFAULT_PROFILE}),
  }

  async run(): Promise<{profile: string; name: SettingName; value: string}> {
    const {args, flags} = await this.parse(ConfigSet)
    const name = args.name as SettingName
    ProfileStore.in(this.config.configDir).set(flags.profile, name, args.value)
    const value = shownSetting(name, args.value.trim())
    this.log(`Set ${name} = ${value} in profile ${flags.profile}.`)
    return {profile: flags.profile, name, value}
  }
}
