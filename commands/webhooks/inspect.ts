import {Args, Flags} from '@oclif/core'

import {renderWebhookInspection} from '../../src/ui/render.js'
import {HEALTH_WINDOW, inspectionOf, type WebhookInspection} from '../../src/webhooks/webhook-report.js'
import {BaseCommand} from '../_shared/base-command.js'

export default class WebhooksInspect extends BaseCommand {
  static override description = "A webhook's configuration, health and recent deliveries with every attempt"
  static override examples = [
    '<%= config.bin %> webhooks inspect wh_3b1f0c2d9e8a',
    '<%= config.bin %> webhooks inspect wh_3b1f0c2d9e8a --limit 50 --json',
  ]
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {limit: Flags.integer({description: `recent deliveries to show (health always covers the last ${HEALTH_WINDOW})`, default: 10, min: 1, max: 200})}

  async run(): Promise<WebhookInspection> {
    const {args, flags} = await this.parse(WebhooksInspect)
    const data = await this.withServices(async (services) => {
      const webhook = await services.webhooks.getById(args.webhookId)
      // Health always covers the same window, whatever --limit shows.
      const window = await services.deliveries.list({webhookId: args.webhookId, limit: Math.max(HEALTH_WINDOW, flags.limit)})
      return inspectionOf(webhook, window.slice(0, HEALTH_WINDOW), window.slice(0, flags.limit))
    })
    if (!this.jsonEnabled()) await renderWebhookInspection(data, this.interactive)
    return data
  }
}
