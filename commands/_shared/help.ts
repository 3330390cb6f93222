import {Help} from '@oclif/core'

import {CONFIG_VARIABLE_HELP} from '../../src/config/config.js'

/** oclif's help, with the environment variables the commands read listed at the end of the root help. */
export default class LeadsHelp extends Help {
  protected override async showRootHelp(): Promise<void> {
    await super.showRootHelp()
    const variables: Array<[string, string]> = [
      ...Object.entries(CONFIG_VARIABLE_HELP),
      ['NO_COLOR', 'set to anything: no colour in the output (as --no-color)'],
    ]
    this.log(`\n${this.section('ENVIRONMENT', variables)}`)
  }
}
