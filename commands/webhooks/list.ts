import {Flags} from '@oclif/core'

import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags} from '../_shared/base-command.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'
import {WEBHOOK_COLUMNS} from '../_shared/webhook-output.js'

export default class WebhooksList extends BaseCommand {
  static override description = 'List webhooks with their state and failure streak'
  static override flags = {customer: Flags.string({description: 'only this customer (UUID)'}), ...tableFlags}

  async run(): Promise<{webhooks: WebhookReport[]}> {
    const {flags} = await this.parse(WebhooksList)
    const webhooks = (await this.withServices((services) => services.webhooks.list(flags.customer))).map(webhookReport)
    if (!this.jsonEnabled()) await renderTable(WEBHOOK_COLUMNS, webhooks, 'No webhooks.', this.tableDisplay(flags))
    return {webhooks}
  }
}
