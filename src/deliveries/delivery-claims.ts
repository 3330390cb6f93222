import type {EventsStore, StoredEvent} from '../events/events-store.js'
import type {Clock} from '../shared/clock.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import {type SigningSecrets, signingSecrets} from '../webhooks/signing-secrets.js'
import type {WebhooksStore, WebhookWithSecrets} from '../webhooks/webhooks-store.js'
import type {Webhook} from '../webhooks/webhook-types.js'
import type {DeliveryLeasesStore} from './delivery-leases-store.js'
import type {Delivery} from './delivery-types.js'

/** A webhook as a worker sends to it: its row and its signing secrets, opened. */
export interface SendingWebhook {
  webhook: Webhook
  secrets: SigningSecrets
}

/** A delivery this worker holds the lease on, with everything an attempt needs. */
export interface ClaimedDelivery extends SendingWebhook {
  delivery: Delivery
  event: StoredEvent
  /** Attempts already on record (a redelivered delivery keeps its earlier ones); new ones are numbered after them. */
  priorAttempts: number
}

/**
 * How long a lease lasts unless renewed. A live worker renews the leases it holds every third of
 * this (its heartbeat), whether the delivery waits its turn, backs off or is on the wire; a worker
 * that died stops renewing, and the sweeper gives its deliveries to another worker within this time.
 */
export const LEASE_MS = 30_000

/** Ids per statement when a worker renews or checks the leases it holds. */
const LEASE_BATCH = 1000

/**
 * Leases on deliveries in the database: a worker sends a delivery only while it holds one, so no
 * two workers send the same attempt. A worker holds a delivery from the claim until it ends or
 * is released, and renews all its leases on a heartbeat.
 */
export class DeliveryClaims {
  constructor(
    private readonly leases: DeliveryLeasesStore,
    private readonly webhooks: WebhooksStore,
    private readonly events: EventsStore,
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private readonly workerId: string,
  ) {}

  /**
   * Claims deliveries and loads what sending them needs (in one round trip on MySQL, see
   * DeliveryLeasesStore.claim). Leaves out what is not this worker's to send (not due, another
   * worker holds it), and settles here what cannot be sent (webhook gone or disabled, event lost).
   */
  async claimMany(ids: readonly string[]): Promise<ClaimedDelivery[]> {
    if (ids.length === 0) return []
    const now = this.clock.now()
    const claimed = await this.leases.claim(ids, this.workerId, now, now + LEASE_MS, {webhooks: this.webhooks, events: this.events})
    const ready: ClaimedDelivery[] = []
    const opened = this.opener()
    for (const {delivery, priorAttempts} of claimed.deliveries) {
      const loaded = claimed.webhooks.get(delivery.webhookId)
      const event = claimed.events.get(delivery.eventId)
      if (!loaded) await this.settle([delivery.id], 'cancelled', 'webhook deleted')
      else if (!loaded.webhook.isActive) await this.settle([delivery.id], 'cancelled', 'webhook disabled')
      else if (!event) await this.settle([delivery.id], 'failed', 'event not found')
      else {
        const sending = opened(loaded)
        // Sealed under a lost master key and not rotated yet: it fails alone, and the batch it came in is sent.
        if (sending === null) await this.settle([delivery.id], 'failed', UNOPENED_SECRET)
        else ready.push({...sending, delivery, event, priorAttempts})
      }
    }
    return ready
  }

  /** The webhooks of these ids as they stand now, secrets opened; a deleted one is missing. */
  async currentWebhooks(ids: readonly string[]): Promise<Map<string, SendingWebhook>> {
    const opened = this.opener()
    const found = await this.webhooks.withSecretsByIds(ids)
    // A held webhook's secret opened when it was claimed; one that no longer does was sealed under another key since, and stops the read as before.
    return new Map([...found].map(([id, loaded]) => [id, opened(loaded) ?? signingSecretsOf(loaded, this.secrets, this.clock.now())]))
  }

  /** The heartbeat: extends the leases of every delivery this worker holds; returns those it lost (cancelled, taken over). */
  async renewAll(deliveryIds: readonly string[]): Promise<string[]> {
    const leaseUntil = this.clock.now() + LEASE_MS
    const lost: string[] = []
    for (let i = 0; i < deliveryIds.length; i += LEASE_BATCH) {
      const ids = deliveryIds.slice(i, i + LEASE_BATCH)
      if ((await this.leases.renewLeases(ids, this.workerId, leaseUntil)) === ids.length) continue
      const held = await this.leases.stillHeld(ids, this.workerId)
      lost.push(...ids.filter((id) => !held.has(id)))
    }
    return lost
  }

  async finish(deliveryId: string, status: 'succeeded' | 'failed', lastError: string | null): Promise<void> {
    await this.leases.finish(deliveryId, this.workerId, status, this.clock.now(), lastError)
  }

  /** Gives deliveries back to the pool: due at once (the worker is stopping), or keeping their due time (parked). */
  async release(deliveryIds: readonly string[], how: 'due now' | 'keep due time'): Promise<void> {
    const now = this.clock.now()
    if (deliveryIds.length > 0) await this.leases.release(deliveryIds, this.workerId, now, how === 'due now' ? now : null)
  }

  /** Ends deliveries that cannot be sent (their webhook was deleted or disabled, their event is gone). */
  async settle(deliveryIds: readonly string[], status: 'cancelled' | 'failed', reason: string): Promise<void> {
    const now = this.clock.now()
    for (const id of deliveryIds) await this.leases.finish(id, this.workerId, status, now, reason)
  }

  /** Opens each webhook's secrets once per call, not once per delivery, as they sign a request sent now; null when they do not open. */
  private opener(): (loaded: WebhookWithSecrets) => SendingWebhook | null {
    const now = this.clock.now()
    const opened = new Map<string, SigningSecrets | null>()
    return (loaded) => {
      let secrets = opened.get(loaded.webhook.id)
      if (secrets === undefined) {
        try {
          secrets = signingSecrets(loaded, this.secrets, now)
        } catch {
          secrets = null
        }
        opened.set(loaded.webhook.id, secrets)
      }
      return secrets === null ? null : {webhook: loaded.webhook, secrets}
    }
  }
}

/** Why a delivery failed without an attempt: its webhook's secret was sealed under a master key the daemon does not hold. */
export const UNOPENED_SECRET =
  'the signing secret of this webhook does not open with this LEADS_MASTER_KEY (sealed under another key): rotate it (leads webhooks rotate-secret), then redeliver'

function signingSecretsOf(loaded: WebhookWithSecrets, box: SecretBox, now: number): SendingWebhook {
  return {webhook: loaded.webhook, secrets: signingSecrets(loaded, box, now)}
}
