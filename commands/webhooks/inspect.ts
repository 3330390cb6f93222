import {Args, Flags} from '@oclif/core'

import {renderWebhookInspection} from '../../src/ui/render.js'
import {HEALTH_WINDOW, inspectionOf, type WebhookInspection} from '../../src/webhooks/webhook-report.js'
import {BaseCommand} from '../_shared/base-command.js'

export default class WebhooksInspect extends BaseCommand {
  static override description =
    "A webhook's configuration, how it is sending now (its circuit breaker, deliveries in flight out of its cap), health, and recent deliveries with where each stands, its next attempt and every attempt"
  static override examples = ['<%= config.bin %> webhooks inspect wh_3b1f0c2d9e8a', '<%= config.bin %> webhooks inspect wh_3b1f0c2d9e8a --limit 50 --json']
  // `show`, as `deliveries show` is named: the word an operator tries first.
  static override aliases = ['webhooks:show']
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {
    limit: Flags.integer({description: `recent deliveries to show (health always covers the last ${HEALTH_WINDOW})`, default: 10, min: 1, max: 200}),
  }

  async run(): Promise<WebhookInspection> {
    const {args, flags} = await this.parse(WebhooksInspect)
    // Redis too: it holds which deliveries are on the wire.
    const data = await this.withServices(
      ['deliveries', 'webhooks'],
      async (services) => {
        const webhook = await services.webhooks.getById(args.webhookId)
        // Health always covers the same window, whatever --limit shows.
        const window = await services.deliveries.list({webhookId: args.webhookId, limit: Math.max(HEALTH_WINDOW, flags.limit)})
        const recent = window.slice(0, flags.limit)
        const [scheduling, states] = await Promise.all([services.deliveries.scheduling(webhook.id), services.deliveries.states(recent)])
        return inspectionOf(webhook, scheduling, window.slice(0, HEALTH_WINDOW), recent, states)
      },
      {redis: true},
    )
    if (!this.jsonEnabled()) await renderWebhookInspection(data, this.interactive)
    return data
  }
}
