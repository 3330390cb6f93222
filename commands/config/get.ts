import {Args} from '@oclif/core'

import {ProfileStore, SETTING_NAMES, type SettingName, shownSetting} from '../../src/client/client-settings.js'
import {NotFoundError} from '../../src/shared/errors.js'
import {BaseCommand, profileFlags} from '../_shared/base-command.js'

export default class ConfigGet extends BaseCommand {
  static override description = "Show a profile's setting (a token only by its first and last characters)"
  static override examples = ['<%= config.bin %> config get base-url', '<%= config.bin %> config get customer --profile acme']
  static override args = {
    name: Args.string({description: 'setting', options: [...SETTING_NAMES], required: true}),
  }
  static override flags = {...profileFlags}

  async run(): Promise<{profile: string; name: SettingName; value: string}> {
    const {args, flags} = await this.parse(ConfigGet)
    const name = args.name as SettingName
    const profile = this.profileInForce(flags.profile)
    const value = ProfileStore.in(this.config.configDir).get(profile)[name]
    if (value === undefined) throw new NotFoundError(`${name} is not set in profile ${profile}`, `set it with \`leads config set ${name} …\``)
    this.log(shownSetting(name, value))
    return {profile, name, value: shownSetting(name, value)}
  }
}
