import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags, uuidFlag} from '../_shared/base-command.js'
import {keyColumns, type KeyOutput, keyOutput} from '../_shared/key-output.js'

export default class KeysList extends BaseCommand {
  static override description = `List API keys (never their tokens)

A key's state is active, rotating (active, and its previous token still works after keys rotate --grace, until OLD TOKEN UNTIL), expired or revoked; --json gives the same word in state.`
  static override examples = [
    '<%= config.bin %> keys list',
    '<%= config.bin %> keys list --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --columns id,name,state,last-used',
  ]
  static override flags = {
    ...tableFlags,
    customer: uuidFlag({description: 'only the keys of this customer (UUID)'}),
  }

  async run(): Promise<{keys: KeyOutput[]}> {
    const {flags} = await this.parse(KeysList)
    const keys = (await this.withServices(['keys'], (services) => services.keys.list(flags.customer))).map((key) => keyOutput(key))
    if (!this.jsonEnabled()) await renderTable(keyColumns({oneCustomer: flags.customer !== undefined}), keys, 'No keys.', this.tableDisplay(flags))
    return {keys}
  }
}
