import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags, uuidFlag} from '../_shared/base-command.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'
import {webhookColumns} from '../_shared/webhook-output.js'

export default class WebhooksList extends BaseCommand {
  static override description = 'List webhooks with their state and failure streak'
  static override examples = [
    '<%= config.bin %> webhooks list',
    '<%= config.bin %> webhooks list --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --columns id,state,failures',
  ]
  static override flags = {customer: uuidFlag({description: 'only this customer (UUID)'}), ...tableFlags}

  async run(): Promise<{webhooks: WebhookReport[]}> {
    const {flags} = await this.parse(WebhooksList)
    const listed = await this.withServices(['webhooks', 'customers'], async (services) => {
      // A mistyped customer is an error, not an empty list (as keys list answers).
      if (flags.customer !== undefined) await services.customers.get(flags.customer)
      return services.webhooks.list(flags.customer)
    })
    const webhooks = listed.map(webhookReport)
    if (!this.jsonEnabled()) await renderTable(webhookColumns({oneCustomer: flags.customer !== undefined}), webhooks, 'No webhooks.', this.tableDisplay(flags))
    return {webhooks}
  }
}
