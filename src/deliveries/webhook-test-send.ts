import {randomUUID} from 'node:crypto'

import {sampleLeadCreated} from '../events/lead-created.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {AppError, NotFoundError} from '../shared/errors.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import {type SigningSecrets, signingSecrets} from '../webhooks/signing-secrets.js'
import type {TargetPolicy} from '../webhooks/ssrf.js'
import type {Webhook} from '../webhooks/webhook-types.js'
import type {WebhooksStore, WebhookWithSecrets} from '../webhooks/webhooks-store.js'
import {DeliverySender, type SendResult} from './sender.js'
import {signedRequest} from './signed-request.js'

/** What a test send came to: the webhook, the delivery id its request carried, and the receiver's answer. */
interface TestSendResult {
  webhook: Webhook
  deliveryId: string
  result: SendResult
}

/** Operator: `leads webhooks test`, a signed sample event sent to a webhook now. */
export class WebhookTestSend {
  constructor(
    private readonly store: WebhooksStore,
    private readonly secrets: SecretBox,
    private readonly targets: TargetPolicy,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Sends a signed sample lead.created to a webhook now, as a delivery attempt would (its URL
   * checked again, its timeout, no redirect), outside the outbox: nothing is recorded or retried.
   * The body has the event's exact shape, with a sample lead.
   */
  async send(webhookId: string): Promise<TestSendResult> {
    const found = await this.store.findWithSecret(webhookId)
    if (!found) throw new NotFoundError(`webhook ${webhookId} does not exist`, 'run `leads webhooks list`')
    const now = this.clock.now()
    const secrets = this.openSecrets(found, now)
    const deliveryId = randomUUID()
    const sender = new DeliverySender(this.targets)
    try {
      const result = await sender.send(signedRequest(found.webhook, secrets, sampleLeadCreated(found.webhook.customerId, now), deliveryId, now))
      return {webhook: found.webhook, deliveryId, result}
    } finally {
      sender.close()
    }
  }

  /** The webhook's secrets; a key that does not open them is named, not left as the cipher's own words. */
  private openSecrets(found: WebhookWithSecrets, now: number): SigningSecrets {
    try {
      return signingSecrets(found, this.secrets, now)
    } catch {
      const id = found.webhook.id
      throw new AppError(
        'api_error',
        500,
        `the signing secret of webhook ${id} does not open with this LEADS_MASTER_KEY: it was sealed under another key`,
        `run the command with the daemons' LEADS_MASTER_KEY; if that key is lost, \`leads webhooks rotate-secret ${id}\` mints a secret under this one`,
      )
    }
  }
}
