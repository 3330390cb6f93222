import type {Db} from '../db/knex.js'
import {StatementBatch} from '../db/statements.js'
import {sendBatch} from '../db/write-transaction.js'
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
  /** Attempts already on record (a redelivered delivery keeps its earlier ones); new ones are numbered after them. */
  priorAttempts: number
}

/**
 * How long a lease lasts unless renewed. A live worker renews the leases it holds every third of
 * this (its heartbeat), through attempts of up to 60 s and backoffs of up to 30 s; a worker that
 * died stops renewing, and the sweeper gives its deliveries to another worker within this time.
 */
export const LEASE_MS = 30_000

/**
 * Leases on deliveries in the database: a worker sends a delivery only while it holds one, so no
 * two workers send the same attempt. The worker renews all its leases on a heartbeat and checks
 * its lease before every retry.
 */
export class DeliveryClaims {
  constructor(
    private readonly db: Db,
    private readonly deliveries: DeliveriesStore,
    private readonly webhooks: WebhooksStore,
    private readonly events: EventsStore,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private readonly workerId: string,
  ) {}

  /**
   * Claims deliveries and loads what sending them needs, in one round trip on MySQL: the claim
   * (an UPDATE that commits on its own), then the claimed rows with their webhooks and events.
   * Leaves out what is not this worker's to send (not due, another worker holds it), and settles
   * here what cannot be sent (webhook gone or disabled, event lost).
   */
  async claimMany(ids: readonly string[]): Promise<ClaimedDelivery[]> {
    if (ids.length === 0) return []
    const now = this.clock.now()
    const leaseUntil = now + LEASE_MS
    const claimed = this.deliveries.claimed(ids, this.workerId, leaseUntil)
    const batch = new StatementBatch().add(this.deliveries.claimStatement(ids, this.workerId, now, leaseUntil))
    const rows = batch.read(this.deliveries.claimedRead(claimed))
    const webhooks = batch.read(this.webhooks.withSecretsRead(claimed.clone().select('webhook_id')))
    const events = batch.read(this.events.manyRead(claimed.clone().select('event_id')))
    await batch.send({send: (statements) => sendBatch(this.db, statements)})

    const ready: ClaimedDelivery[] = []
    // Each webhook's secret is opened once per claim, not once per delivery.
    const secrets = new Map<string, string>()
    const secretOf = (webhookId: string, ciphertext: string) => secrets.get(webhookId) ?? secrets.set(webhookId, this.secrets.open(ciphertext)).get(webhookId)!
    for (const {delivery, priorAttempts} of rows()) {
      const loaded = webhooks().get(delivery.webhookId)
      const event = events().get(delivery.eventId)
      if (!loaded) await this.settle(delivery.id, 'cancelled', 'webhook deleted')
      else if (!loaded.webhook.isActive) await this.settle(delivery.id, 'cancelled', 'webhook disabled')
      else if (!event) await this.settle(delivery.id, 'failed', 'event not found')
      else ready.push({delivery, webhook: loaded.webhook, secret: secretOf(delivery.webhookId, loaded.secretCiphertext), event, priorAttempts})
    }
    return ready
  }

  /** Extends the lease before an attempt; false when the delivery was cancelled or taken over meanwhile. */
  async renew(claimed: ClaimedDelivery): Promise<boolean> {
    return this.deliveries.renewLease(claimed.delivery.id, this.workerId, this.clock.now() + LEASE_MS)
  }

  /** The heartbeat: extends the leases of every delivery this worker holds, in one statement. */
  async renewAll(deliveryIds: readonly string[]): Promise<void> {
    if (deliveryIds.length > 0) await this.deliveries.renewLeases(deliveryIds, this.workerId, this.clock.now() + LEASE_MS)
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
}
