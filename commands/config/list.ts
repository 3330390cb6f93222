import {DEFAULT_PROFILE, ProfileStore, SETTING_NAMES, shownSetting} from '../../src/client/client-settings.js'
import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags} from '../_shared/base-command.js'

interface SettingRow {
  profile: string
  name: string
  value: string
}

export default class ConfigList extends BaseCommand {
  static override description = `Every profile's settings (tokens only by their first and last characters), the one in force marked with *; pull and push use --profile, else LEADS_PROFILE, else the one \`leads config use\` chose, else "${DEFAULT_PROFILE}"`
  static override examples = ['<%= config.bin %> config list', '<%= config.bin %> config list --json']
  static override flags = {...tableFlags}

  async run(): Promise<{current: string; profiles: SettingRow[]}> {
    const {flags} = await this.parse(ConfigList)
    const current = this.profileInForce(undefined)
    const rows = Object.entries(ProfileStore.in(this.config.configDir).all()).flatMap(([profile, settings]) =>
      SETTING_NAMES.flatMap((name) => (settings[name] === undefined ? [] : [{profile, name, value: shownSetting(name, settings[name])}])),
    )
    if (!this.jsonEnabled()) {
      await renderTable(
        [
          {header: 'PROFILE', kind: 'id', value: (row: SettingRow) => (row.profile === current ? `${row.profile} *` : row.profile)},
          {header: 'SETTING', kind: 'short', value: (row) => row.name},
          {header: 'VALUE', kind: 'id', value: (row) => row.value},
        ],
        rows,
        'No profiles yet: `leads config set base-url URL` makes the default one.',
        this.tableDisplay(flags),
      )
    }
    return {current, profiles: rows}
  }
}
