import {Flags} from '@oclif/core'

import {renderSecretOnce} from '../../src/ui/render.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'
import {EVENT_TYPES} from '../../src/webhooks/webhook-types.js'
import {BaseCommand, sharedFlags} from '../_shared/base-command.js'

export default class WebhooksCreate extends BaseCommand {
  static override description = 'Register a webhook for a customer, as the customer would with POST /lead-webhooks; the signing secret is shown once'
  static override examples = [
    '<%= config.bin %> webhooks create --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --url https://crm.example.com/hooks/leads',
    '<%= config.bin %> webhooks create --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --url https://crm.example.com/hooks/leads --timeout-seconds 5 --retry-attempts 3 --description "CRM sync" --json',
  ]
  static override flags = {
    customer: sharedFlags.customer,
    url: Flags.string({description: 'public HTTPS URL of the receiver', required: true}),
    event: Flags.string({description: 'event type to send (repeat for several)', options: [...EVENT_TYPES], multiple: true, default: [...EVENT_TYPES]}),
    description: Flags.string({description: 'what the receiver is, for the customer and operators'}),
    'timeout-seconds': Flags.integer({description: 'per-attempt timeout, 1 to 60 (default 10)'}),
    'retry-attempts': Flags.integer({description: 'retries after the first attempt, 0 to 10 (default 5)'}),
  }

  async run(): Promise<{webhook: WebhookReport; secret: string}> {
    const {flags} = await this.parse(WebhooksCreate)
    const body = {
      url: flags.url,
      event_types: flags.event,
      ...(flags.description === undefined ? {} : {description: flags.description}),
      ...(flags['timeout-seconds'] === undefined ? {} : {timeout_seconds: flags['timeout-seconds']}),
      ...(flags['retry-attempts'] === undefined ? {} : {retry_attempts: flags['retry-attempts']}),
    }
    const created = await this.withServices(['webhooks', 'customers'], async (services) => {
      // Named as every --customer is: the database's refusal would be an unexpected failure quoting its constraint.
      await services.customers.get(flags.customer)
      return services.webhooks.create(flags.customer, body)
    })
    const output = {webhook: webhookReport(created.webhook), secret: created.secret as string}
    if (!this.jsonEnabled()) {
      await renderSecretOnce(
        {
          title: 'Webhook signing secret',
          secret: output.secret,
          details: [
            ['webhook id', output.webhook.id],
            ['url', output.webhook.url],
          ],
        },
        this.interactive,
      )
    }
    return output
  }
}
