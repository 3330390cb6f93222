import {Args} from '@oclif/core'

import {renderSecretOnce} from '../../src/ui/render.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'
import {BaseCommand, confirmFlags} from '../_shared/base-command.js'

export default class WebhooksRotateSecret extends BaseCommand {
  static override description =
    "Mint a new signing secret for a webhook (as PATCH rotate_secret); events created from now on are signed with it, so the receiver needs it at once"
  static override examples = ['<%= config.bin %> webhooks rotate-secret wh_3b1f0c2d9e8a', '<%= config.bin %> webhooks rotate-secret wh_3b1f0c2d9e8a --yes --json']
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {...confirmFlags}

  async run(): Promise<{webhook: WebhookReport; secret: string}> {
    const {args, flags} = await this.parse(WebhooksRotateSecret)
    await this.confirm(`Rotate the signing secret of ${args.webhookId}? Its receiver rejects new events until it has the new secret.`, flags.yes)
    const rotated = await this.withServices((services) => services.webhooks.rotateSecretById(args.webhookId))
    const output = {webhook: webhookReport(rotated.webhook), secret: rotated.secret as string}
    if (!this.jsonEnabled()) {
      await renderSecretOnce({title: 'New webhook signing secret', secret: output.secret, details: [['webhook id', output.webhook.id], ['url', output.webhook.url]]}, this.interactive)
    }
    return output
  }
}
