import {Args} from '@oclif/core'

import {BaseCommand, confirmFlags} from '../_shared/base-command.js'

export default class WebhooksDelete extends BaseCommand {
  static override description = "Delete a customer's webhook; its pending deliveries are cancelled"
  static override examples = ['<%= config.bin %> webhooks delete wh_3b1f0c2d9e8a', '<%= config.bin %> webhooks delete wh_3b1f0c2d9e8a --yes']
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {...confirmFlags}

  async run(): Promise<{id: string; deleted: true}> {
    const {args, flags} = await this.parse(WebhooksDelete)
    await this.confirm(`Delete webhook ${args.webhookId}? Its pending deliveries are cancelled, and it cannot be undone.`, flags.yes)
    const webhook = await this.withServices(['webhooks'], (services) => services.webhooks.deleteById(args.webhookId))
    this.log(`Deleted webhook ${webhook.id} (${webhook.url}) of customer ${webhook.customerId}.`)
    return {id: webhook.id, deleted: true}
  }
}
