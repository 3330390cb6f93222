import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, sharedFlags, tableFlags} from '../_shared/base-command.js'
import {FIELD_COLUMNS, type FieldOutput, fieldOutput} from '../_shared/setup-output.js'

export default class FieldsList extends BaseCommand {
  static override description = "List a customer's custom-field definitions"
  static override examples = ['<%= config.bin %> fields list --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21']
  static override flags = {customer: sharedFlags.customer, ...tableFlags}

  async run(): Promise<{fields: FieldOutput[]}> {
    const {flags} = await this.parse(FieldsList)
    const fields = (await this.withServices(['customers'], (services) => services.customers.listFields(flags.customer))).map(fieldOutput)
    if (!this.jsonEnabled()) await renderTable(FIELD_COLUMNS, fields, 'No custom fields.', this.tableDisplay(flags))
    return {fields}
  }
}
