import {Args} from '@oclif/core'

import {isoTime} from '../../src/shared/clock.js'
import {renderSecretOnce} from '../../src/ui/render.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'
import {BaseCommand, confirmFlags} from '../_shared/base-command.js'

export default class WebhooksRotateSecret extends BaseCommand {
  static override description =
    'Mint a new signing secret for a webhook (as PATCH rotate_secret); for 24 h every delivery is also signed with the old one (X-Service-Signature-Previous), so the receiver can switch to the new one in that time'
  static override examples = [
    '<%= config.bin %> webhooks rotate-secret wh_3b1f0c2d9e8a',
    '<%= config.bin %> webhooks rotate-secret wh_3b1f0c2d9e8a --yes --json',
  ]
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {...confirmFlags}

  async run(): Promise<{webhook: WebhookReport; secret: string; previous_secret_until: string | null}> {
    const {args, flags} = await this.parse(WebhooksRotateSecret)
    await this.confirm(
      `Rotate the signing secret of ${args.webhookId}? Its receiver must verify with the new secret within 24 h; until then deliveries also carry X-Service-Signature-Previous, made with the old one.`,
      flags.yes,
    )
    const rotated = await this.withServices(['webhooks'], (services) => services.webhooks.rotateSecretById(args.webhookId))
    const output = {
      webhook: webhookReport(rotated.webhook),
      secret: rotated.secret as string,
      previous_secret_until: typeof rotated.previousSecretUntil === 'number' ? isoTime(rotated.previousSecretUntil) : null,
    }
    if (!this.jsonEnabled()) {
      const details: Array<[string, string]> = [
        ['webhook id', output.webhook.id],
        ['url', output.webhook.url],
        [
          'old secret',
          output.previous_secret_until === null
            ? 'sealed under a master key this database no longer uses, so it signs nothing: the receiver rejects deliveries until it verifies with the new secret'
            : `still signs X-Service-Signature-Previous until ${output.previous_secret_until}; give the receiver the new secret before then`,
        ],
      ]
      await renderSecretOnce({title: 'New webhook signing secret', secret: output.secret, details}, this.interactive)
    }
    return output
  }
}
