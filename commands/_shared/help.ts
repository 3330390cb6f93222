import {CommandHelp, Help} from '@oclif/core'

import {CONFIG_VARIABLE_HELP} from '../../src/config/config.js'

/**
 * A command's help: its first line is printed at the top, so DESCRIPTION holds only the
 * paragraphs after it, and is left out when there are none.
 */
class LeadsCommandHelp extends CommandHelp {
  protected override description(): string | undefined {
    const rest = (this.command.description ?? '').split('\n').slice(1).join('\n').trim()
    return rest === '' ? undefined : this.wrap(rest)
  }
}

/** oclif's help, with the environment variables the commands read listed at the end of the root help. */
export default class LeadsHelp extends Help {
  protected override CommandHelpClass = LeadsCommandHelp

  protected override async showRootHelp(): Promise<void> {
    await super.showRootHelp()
    const variables: Array<[string, string]> = [
      ...Object.entries(CONFIG_VARIABLE_HELP),
      // oclif's own <BIN>_CONFIG_DIR: where `leads config` keeps the profiles the client commands read.
      ['LEADS_CONFIG_DIR', 'directory of the client profiles (profiles.json) that leads config keeps (default $XDG_CONFIG_HOME/leads, else ~/.config/leads)'],
      ['NO_COLOR', 'set to anything: no colour in the output (as --no-color)'],
    ]
    this.log(`\n${this.section('ENVIRONMENT', variables)}`)
  }
}
