import {Args} from '@oclif/core'

import {BaseCommand} from '../_shared/base-command.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'

export default class WebhooksEnable extends BaseCommand {
  static override description = 'Turn a webhook on again; new events are delivered to it'
  static override examples = ['<%= config.bin %> webhooks enable wh_3b1f0c2d9e8a']
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}

  async run(): Promise<WebhookReport> {
    const {args} = await this.parse(WebhooksEnable)
    const {webhook: stored, changed} = await this.withServices(['webhooks'], (services) => services.webhooks.setActive(args.webhookId, true))
    const webhook = webhookReport(stored)
    this.log(changed ? `Webhook ${webhook.id} is now active.` : `Webhook ${webhook.id} is already active; nothing changed.`)
    return webhook
  }
}
