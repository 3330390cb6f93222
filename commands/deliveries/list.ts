import {Flags} from '@oclif/core'

import {DELIVERY_STATUSES} from '../../src/deliveries/delivery-types.js'
import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags} from '../_shared/base-command.js'
import {type DeliveryReport, deliveryReport, stateOf} from '../../src/webhooks/webhook-report.js'
import {DELIVERY_COLUMNS} from '../_shared/webhook-output.js'

export default class DeliveriesList extends BaseCommand {
  static override description =
    'List recent webhook deliveries, newest first, each with its status and where it stands (waiting, held, backing_off, delivering, or how it ended)'
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
    // Redis too: it holds which deliveries are on the wire, part of each one's state.
    const deliveries = await this.withServices(
      ['deliveries'],
      async (services) => {
        const found = await services.deliveries.list({webhookId: flags.webhook, status: flags.status, limit: flags.limit})
        const states = await services.deliveries.states(found)
        return found.map((delivery) => deliveryReport(delivery, stateOf(states, delivery)))
      },
      {redis: true},
    )
    if (!this.jsonEnabled()) await renderTable(DELIVERY_COLUMNS, deliveries, 'No deliveries.', this.tableDisplay(flags))
    return {deliveries}
  }
}
