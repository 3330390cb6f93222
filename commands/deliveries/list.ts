import {Flags} from '@oclif/core'

import {DELIVERY_STATUSES} from '../../src/deliveries/delivery-types.js'
import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags} from '../_shared/base-command.js'
import {type DeliveryReport, deliveryReport} from '../../src/webhooks/webhook-report.js'
import {DELIVERY_COLUMNS} from '../_shared/webhook-output.js'

export default class DeliveriesList extends BaseCommand {
  static override description = 'List recent webhook deliveries, newest first'
  static override examples = [
    '<%= config.bin %> deliveries list --webhook wh_3b1f0c2d9e8a --status failed',
    '<%= config.bin %> deliveries list --limit 100 --columns id,status,last-error',
  ]
  static override flags = {
    ...tableFlags,
    webhook: Flags.string({description: 'only this webhook (wh_...)'}),
    status: Flags.string({description: 'only deliveries in this state', options: [...DELIVERY_STATUSES]}),
    limit: Flags.integer({description: 'how many', default: 50, min: 1, max: 1000}),
  }

  async run(): Promise<{deliveries: DeliveryReport[]}> {
    const {flags} = await this.parse(DeliveriesList)
    const deliveries = (await this.withServices((services) => services.deliveries.list({webhookId: flags.webhook, status: flags.status, limit: flags.limit}))).map(deliveryReport)
    if (!this.jsonEnabled()) await renderTable(DELIVERY_COLUMNS, deliveries, 'No deliveries.', this.tableDisplay(flags))
    return {deliveries}
  }
}
