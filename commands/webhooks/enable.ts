import {Args} from '@oclif/core'

import {BaseCommand} from '../_shared/base-command.js'
import {type WebhookOutput, webhookOutput} from '../_shared/webhook-output.js'

export default class WebhooksEnable extends BaseCommand {
  static override description = 'Turn a webhook on again; new events are delivered to it'
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}

  async run(): Promise<WebhookOutput> {
    const {args} = await this.parse(WebhooksEnable)
    const webhook = webhookOutput(await this.withServices((services) => services.webhooks.setActive(args.webhookId, true)))
    this.log(`Webhook ${webhook.id} is now ${webhook.is_active ? 'active' : 'disabled'}.`)
    return webhook
  }
}
