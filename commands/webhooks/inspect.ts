import {Args, Flags} from '@oclif/core'

import {renderWebhookInspection} from '../../src/ui/render.js'
import type {WebhookInspection} from '../../src/ui/WebhookDashboard.js'
import {BaseCommand} from '../_shared/base-command.js'
import {deliveryOutput, webhookOutput} from '../_shared/webhook-output.js'

export default class WebhooksInspect extends BaseCommand {
  static override description = "A webhook's configuration, health and recent deliveries with every attempt"
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {limit: Flags.integer({description: 'recent deliveries to show', default: 10, min: 1, max: 200})}

  async run(): Promise<WebhookInspection> {
    const {args, flags} = await this.parse(WebhooksInspect)
    const data = await this.withServices(async (services) => {
      const webhook = webhookOutput(await services.webhooks.getById(args.webhookId))
      const recent = (await services.deliveries.list({webhookId: args.webhookId, limit: flags.limit})).map(deliveryOutput)
      const delivered = recent.filter((d) => d.status === 'succeeded').length
      const failed = recent.filter((d) => d.status === 'failed').length
      const lastAttempt = recent.flatMap((d) => d.attempts).sort((a, b) => b.started_at.localeCompare(a.started_at))[0]
      return {
        webhook,
        health: {
          success_rate: delivered + failed === 0 ? null : delivered / (delivered + failed),
          delivered,
          failed,
          consecutive_failures: webhook.consecutive_failures,
          last_status: lastAttempt ? String(lastAttempt.status_code ?? lastAttempt.error) : null,
          last_success_at: webhook.last_success_at,
          failing_since: webhook.failing_since,
        },
        recent,
      }
    })
    if (!this.jsonEnabled()) await renderWebhookInspection(data, this.interactive)
    return data
  }
}
