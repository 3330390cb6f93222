import type {EventsStore, StoredEvent} from '../events/events-store.js'
import type {Clock} from '../shared/clock.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import type {Webhook} from '../webhooks/webhook-types.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import type {DeliveriesStore} from './deliveries-store.js'
import type {Delivery} from './delivery-types.js'

/** A delivery this worker holds the lease on, with everything an attempt needs. */
export interface ClaimedDelivery {
  delivery: Delivery
  webhook: Webhook
  secret: string
  event: StoredEvent
}

/**
 * Leases on deliveries in the database: a worker sends a delivery only while it holds one, so no
 * two workers send the same attempt. A lease lasts one attempt's timeout plus the longest backoff
 * and a margin; the worker renews it before every attempt.
 */
export class DeliveryClaims {
  constructor(
    private readonly deliveries: DeliveriesStore,
    private readonly webhooks: WebhooksStore,
    private readonly events: EventsStore,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private readonly workerId: string,
    private readonly maxDelayMs: number,
  ) {}

  /**
   * Claims a delivery and loads what sending it needs; null when it is not this worker's to send
   * (not due, another worker holds it, or it was settled here: webhook gone or disabled, event lost).
   */
  async claim(deliveryId: string): Promise<ClaimedDelivery | null> {
    const delivery = await this.deliveries.find(deliveryId)
    if (!delivery) return null
    const loaded = await this.webhooks.findWithSecret(delivery.webhookId)
    const now = this.clock.now()
    if (!(await this.deliveries.claim(deliveryId, this.workerId, now, now + this.leaseMs(loaded?.webhook)))) return null

    if (!loaded) return this.settle(deliveryId, 'cancelled', 'webhook deleted')
    if (!loaded.webhook.isActive) return this.settle(deliveryId, 'cancelled', 'webhook disabled')
    const event = await this.events.find(delivery.eventId)
    if (!event) return this.settle(deliveryId, 'failed', 'event not found')
    return {delivery, webhook: loaded.webhook, secret: this.secrets.open(loaded.secretCiphertext), event}
  }

  /** Extends the lease before an attempt; false when the delivery was cancelled or taken over meanwhile. */
  async renew(claimed: ClaimedDelivery): Promise<boolean> {
    return this.deliveries.renewLease(claimed.delivery.id, this.workerId, this.clock.now() + this.leaseMs(claimed.webhook))
  }

  async finish(deliveryId: string, status: 'succeeded' | 'failed', lastError: string | null): Promise<void> {
    await this.deliveries.finish(deliveryId, this.workerId, status, this.clock.now(), lastError)
  }

  /** Gives a delivery back to the pool, due at once (the worker is stopping). */
  async release(deliveryId: string): Promise<void> {
    await this.deliveries.release(deliveryId, this.workerId, this.clock.now())
  }

  private async settle(deliveryId: string, status: 'cancelled' | 'failed', reason: string): Promise<null> {
    await this.deliveries.finish(deliveryId, this.workerId, status, this.clock.now(), reason)
    return null
  }

  private leaseMs(webhook: Webhook | undefined): number {
    return (webhook ? webhook.timeoutSeconds * 1000 : 60_000) + this.maxDelayMs + 30_000
  }
}
