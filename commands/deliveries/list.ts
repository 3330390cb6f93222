import {Flags} from '@oclif/core'

import {DELIVERY_STATUSES} from '../../src/deliveries/delivery-types.js'
import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags} from '../_shared/base-command.js'
import {type DeliveryReport, deliveryReport, stateOf} from '../../src/webhooks/webhook-report.js'
import {DELIVERY_COLUMNS} from '../_shared/webhook-output.js'

export default class DeliveriesList extends BaseCommand {
  static override description =
    'List webhook deliveries, newest first, each with its status and where it stands (waiting, held, backing_off, delivering, or how it ended). Pages as the API does: when more are left, --json has next_cursor (null on the last page) and the table is followed by a line on stderr; pass it as --cursor, with the same --webhook and --status, for the older ones'
  static override examples = [
    '<%= config.bin %> deliveries list --webhook wh_3b1f0c2d9e8a --status failed',
    '<%= config.bin %> deliveries list --limit 100 --columns id,status,last-error',
    '<%= config.bin %> deliveries list --webhook wh_3b1f0c2d9e8a --limit 1000 --cursor <next_cursor of the page before>',
  ]
  static override flags = {
    ...tableFlags,
    webhook: Flags.string({description: 'only this webhook (wh_...)'}),
    status: Flags.string({description: 'only deliveries in this state', options: [...DELIVERY_STATUSES]}),
    limit: Flags.integer({description: 'how many on this page', default: 50, min: 1, max: 1000}),
    cursor: Flags.string({description: 'continue after an earlier page: its next_cursor, with the same --webhook and --status'}),
  }

  async run(): Promise<{deliveries: DeliveryReport[]; next_cursor: string | null}> {
    const {flags} = await this.parse(DeliveriesList)
    // Redis too: it holds which deliveries are on the wire, part of each one's state.
    const {deliveries, nextCursor} = await this.withServices(
      ['deliveries'],
      async (services) => {
        const page = await services.deliveries.page({webhookId: flags.webhook, status: flags.status, limit: flags.limit, cursor: flags.cursor})
        const states = await services.deliveries.states(page.deliveries)
        return {deliveries: page.deliveries.map((delivery) => deliveryReport(delivery, stateOf(states, delivery))), nextCursor: page.nextCursor}
      },
      {redis: true},
    )
    if (!this.jsonEnabled()) {
      await renderTable(DELIVERY_COLUMNS, deliveries, 'No deliveries.', this.tableDisplay(flags))
      // On stderr: the table on stdout stays only rows for whatever reads it.
      if (nextCursor) process.stderr.write(`more: add --cursor ${nextCursor} for the next page\n`)
    }
    return {deliveries, next_cursor: nextCursor}
  }
}
