import {Args} from '@oclif/core'

import {BaseCommand} from '../_shared/base-command.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'

export default class WebhooksDisable extends BaseCommand {
  static override description = 'Turn a webhook off; new events are not delivered and pending deliveries are cancelled when picked up'
  static override examples = ['<%= config.bin %> webhooks disable wh_3b1f0c2d9e8a']
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}

  async run(): Promise<WebhookReport> {
    const {args} = await this.parse(WebhooksDisable)
    const {webhook: stored, changed} = await this.withServices(['webhooks'], (services) => services.webhooks.setActive(args.webhookId, false))
    const webhook = webhookReport(stored)
    const reason = webhook.disabled_reason ? ` (${webhook.disabled_reason})` : ''
    this.log(changed ? `Webhook ${webhook.id} is now disabled.` : `Webhook ${webhook.id} is already disabled${reason}; nothing changed.`)
    return webhook
  }
}
