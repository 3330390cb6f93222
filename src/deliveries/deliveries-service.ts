import type {EventsStore, StoredEvent} from '../events/events-store.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {NotFoundError, ValidationError} from '../shared/errors.js'
import {UUID_PATTERN} from '../shared/validate.js'
import type {WebhooksService} from '../webhooks/webhooks-service.js'
import type {DeliveriesStore, DeliveryFilter} from './deliveries-store.js'
import {type Delivery, type DeliveryAttempt, DELIVERY_STATUSES, type DeliveryStatus} from './delivery-types.js'
import type {DispatchQueue} from './dispatch-queue.js'
import {DeliveryTail} from './delivery-tail.js'

export interface DeliveryWithAttempts extends Delivery {
  attempts: DeliveryAttempt[]
}

/** Operator side of deliveries: listing, inspecting and redelivering. */
export class DeliveriesService {
  constructor(
    private readonly store: DeliveriesStore,
    private readonly webhooks: WebhooksService,
    private readonly queue: DispatchQueue,
    private readonly events: EventsStore,
    private readonly clock: Clock = systemClock,
  ) {}

  async list(filter: {webhookId?: string; status?: string; since?: number; limit?: number}): Promise<DeliveryWithAttempts[]> {
    if (filter.webhookId !== undefined) await this.webhooks.getById(filter.webhookId)
    const storeFilter: DeliveryFilter = {webhookId: filter.webhookId, since: filter.since, limit: filter.limit, status: parseStatus(filter.status)}
    return this.withAttempts(await this.store.list(storeFilter))
  }

  async show(id: string): Promise<DeliveryWithAttempts> {
    const delivery = await this.store.find(checkDeliveryId(id))
    if (!delivery) throw deliveryNotFound(id)
    const [withAttempts] = await this.withAttempts([delivery])
    return withAttempts as DeliveryWithAttempts
  }

  /** A tail of the deliveries queued and attempts finished from `start` on, optionally of one webhook or customer. */
  tail(filter: {webhookId?: string; customerId?: string}, start: number): DeliveryTail {
    return new DeliveryTail(this.store, filter, start)
  }

  /** A delivery with its attempts and the event it carries (what was sent, as the `lead` of each body). */
  async detail(id: string): Promise<{delivery: DeliveryWithAttempts; event: StoredEvent | null}> {
    const delivery = await this.show(id)
    return {delivery, event: await this.events.find(delivery.eventId)}
  }

  /**
   * Queues deliveries again: same id (so the same X-Service-Delivery), fresh attempts, fresh
   * signatures. A delivery being delivered right now is left alone. Returns the ids queued.
   */
  async redeliver(ids: string[]): Promise<string[]> {
    const known = new Set(await this.store.existingIds(ids.map(checkDeliveryId)))
    const unknown = ids.find((id) => !known.has(id))
    if (unknown !== undefined) throw deliveryNotFound(unknown)
    return this.requeue(ids)
  }

  /** Redelivers a webhook's failed deliveries, optionally only those created since a time. */
  async redeliverFailed(webhookId: string, since?: number): Promise<string[]> {
    await this.webhooks.getById(webhookId)
    const failed = await this.store.list({webhookId, status: 'failed', since, limit: 10_000})
    return this.requeue(failed.map((delivery) => delivery.id))
  }

  private async requeue(ids: string[]): Promise<string[]> {
    const reset = await this.store.resetForRedelivery(ids, this.clock.now())
    // The queue is a shortcut; without it the daemon's sweeper picks them up within 2 s.
    await this.queue.enqueue(reset).catch(() => undefined)
    return reset
  }

  private async withAttempts(deliveries: Delivery[]): Promise<DeliveryWithAttempts[]> {
    const attempts = await this.store.attempts(deliveries.map((delivery) => delivery.id))
    return deliveries.map((delivery) => ({...delivery, attempts: attempts.filter((attempt) => attempt.deliveryId === delivery.id)}))
  }
}

function checkDeliveryId(id: string): string {
  if (!UUID_PATTERN.test(id)) throw new ValidationError(`delivery id must be a UUID, got "${id}"`, 'id')
  return id
}

function deliveryNotFound(id: string): NotFoundError {
  return new NotFoundError(`delivery ${id} does not exist`, 'run `leads deliveries list`')
}

function parseStatus(status: string | undefined): DeliveryStatus | undefined {
  if (status === undefined) return undefined
  if (!(DELIVERY_STATUSES as readonly string[]).includes(status)) {
    throw new ValidationError(`status must be one of ${DELIVERY_STATUSES.join(', ')}`, 'status')
  }
  return status as DeliveryStatus
}
