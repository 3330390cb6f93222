import {Args} from '@oclif/core'

import {ProfileStore, SETTING_NAMES, type SettingName} from '../../src/client/client-settings.js'
import {NotFoundError} from '../../src/shared/errors.js'
import {BaseCommand, profileFlags} from '../_shared/base-command.js'

export default class ConfigUnset extends BaseCommand {
  static override description = 'Remove a client setting from a profile'
  static override examples = ['<%= config.bin %> config unset token', '<%= config.bin %> config unset customer --profile acme']
  static override args = {
    name: Args.string({description: 'setting', options: [...SETTING_NAMES], required: true}),
  }
  static override flags = {...profileFlags}

  async run(): Promise<{profile: string; name: SettingName}> {
    const {args, flags} = await this.parse(ConfigUnset)
    const name = args.name as SettingName
    const profile = this.profileInForce(flags.profile)
    if (!ProfileStore.in(this.config.configDir).unset(profile, name)) {
      throw new NotFoundError(`${name} is not set in profile ${profile}`, '`leads config list` shows what is set')
    }
    this.log(`Removed ${name} from profile ${profile}.`)
    return {profile, name}
  }
}
