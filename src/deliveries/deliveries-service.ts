import type {EventsStore, StoredEvent} from '../events/events-store.js'
import type {CursorCodec} from '../leads/cursor.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {ConflictError, NotFoundError, ValidationError} from '../shared/errors.js'
import {UUID_PATTERN} from '../shared/validate.js'
import {type Breaker, DEFAULT_MAX_IN_FLIGHT, type Webhook} from '../webhooks/webhook-types.js'
import type {WebhooksService} from '../webhooks/webhooks-service.js'
import type {DeliveriesStore, DeliveryFilter} from './deliveries-store.js'
import {type Delivery, type DeliveryAttempt, DELIVERY_STATUSES, type DeliveryStatus} from './delivery-types.js'
import type {DispatchQueue} from './dispatch-queue.js'
import {deliveryState, type DeliveryStateView} from './delivery-state.js'
import {DeliveryTail} from './delivery-tail.js'
import type {InFlightSlots} from './in-flight-slots.js'
import {checkRecoverSince} from './recover.js'

/** Deliveries read and reset per statement when a webhook's failed deliveries are queued again. */
const REQUEUE_PAGE = 500

export interface DeliveryWithAttempts extends Delivery {
  attempts: DeliveryAttempt[]
}

/** How a webhook's deliveries are being sent: its breaker, what is on the wire and its cap. */
export interface WebhookScheduling {
  breaker: Breaker
  inFlight: number
  maxInFlight: number
}

/** Deliveries: the operator's listing, inspecting and redelivering, and a customer's recover. */
export class DeliveriesService {
  constructor(
    private readonly store: DeliveriesStore,
    private readonly webhooks: WebhooksService,
    private readonly queue: DispatchQueue,
    private readonly events: EventsStore,
    private readonly inFlight: InFlightSlots,
    private readonly cursors: CursorCodec,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Where each delivery stands (delivery-state.ts), from its webhook's breaker and in-flight record, read once per webhook. */
  async states(deliveries: readonly Delivery[]): Promise<Map<string, DeliveryStateView>> {
    const now = this.clock.now()
    const webhooks = new Map<string, Webhook | null>()
    for (const delivery of deliveries) {
      if (!webhooks.has(delivery.webhookId)) webhooks.set(delivery.webhookId, await this.webhooks.getById(delivery.webhookId).catch(() => null))
    }
    const known = [...webhooks.values()].filter((webhook): webhook is Webhook => webhook !== null)
    const onTheWire = await this.inFlight.onTheWire(
      known.map((webhook) => ({customerId: webhook.customerId, id: webhook.id})),
      now,
    )
    const closed: Breaker = {state: 'closed', until: null, openedAt: null}
    return new Map(
      deliveries.map((delivery) => {
        const webhook = webhooks.get(delivery.webhookId)
        const sending = onTheWire.get(delivery.webhookId)?.includes(delivery.id) ?? false
        return [delivery.id, deliveryState(delivery, webhook?.breaker ?? closed, sending, now)]
      }),
    )
  }

  /** A webhook's breaker, how many of its deliveries are on the wire, and its cap. */
  async scheduling(webhookId: string): Promise<WebhookScheduling> {
    const webhook = await this.webhooks.getById(webhookId)
    const onTheWire = await this.inFlight.onTheWire([{customerId: webhook.customerId, id: webhook.id}], this.clock.now())
    return {breaker: webhook.breaker, inFlight: onTheWire.get(webhook.id)?.length ?? 0, maxInFlight: webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT}
  }

  async list(filter: {webhookId?: string; status?: string; since?: number; limit?: number}): Promise<DeliveryWithAttempts[]> {
    const storeFilter: DeliveryFilter = {webhookId: filter.webhookId, since: filter.since, limit: filter.limit, status: parseStatus(filter.status)}
    const found = await this.store.list(storeFilter)
    if (found.length === 0 && filter.webhookId !== undefined) await this.requireKnownWebhook(filter.webhookId)
    return this.withAttempts(found)
  }

  /**
   * One page of the operator's delivery list, newest first: `cursor` (an earlier page's
   * next_cursor, issued for the same webhook and status filters) continues after that page, as
   * the API's list cursors do; next_cursor is null on the last page.
   */
  async page(filter: {
    webhookId?: string
    status?: string
    limit: number
    cursor?: string
  }): Promise<{deliveries: DeliveryWithAttempts[]; nextCursor: string | null}> {
    const status = parseStatus(filter.status)
    // JSON, so that no webhook id or status can make two filters read the same.
    const scope = JSON.stringify(['deliveries', filter.webhookId ?? null, status ?? null])
    const before = filter.cursor === undefined ? undefined : this.cursors.decodeDeliveries(filter.cursor, scope)
    const found = await this.store.list({webhookId: filter.webhookId, status, limit: filter.limit + 1, before})
    if (found.length === 0 && filter.webhookId !== undefined && before === undefined) await this.requireKnownWebhook(filter.webhookId)
    const shown = found.slice(0, filter.limit)
    const last = shown.at(-1)
    const nextCursor = found.length > filter.limit && last ? this.cursors.encodeDeliveries({createdAt: last.createdAt, id: last.id}, scope) : null
    return {deliveries: await this.withAttempts(shown), nextCursor}
  }

  /** A deleted webhook's deliveries stay (cancelled), so its id is known while any remain; else it must name a webhook. */
  private async requireKnownWebhook(webhookId: string): Promise<void> {
    if ((await this.store.list({webhookId, limit: 1})).length > 0) return
    await this.webhooks.getById(webhookId)
  }

  async show(id: string): Promise<DeliveryWithAttempts> {
    const delivery = await this.store.find(checkDeliveryId(id))
    if (!delivery) throw deliveryNotFound(id)
    const [withAttempts] = await this.withAttempts([delivery])
    return withAttempts as DeliveryWithAttempts
  }

  /** A tail of the deliveries queued and attempts finished from `start` on, optionally of one webhook or customer. */
  tail(filter: {webhookId?: string; customerId?: string}, start: number): DeliveryTail {
    return new DeliveryTail(this.store, (deliveries) => this.states(deliveries), filter, start)
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
  async redeliver(given: string[]): Promise<string[]> {
    const ids = given.map(checkDeliveryId)
    const webhookOf = await this.store.webhooksOf(ids)
    const unknown = ids.find((id) => !webhookOf.has(id))
    if (unknown !== undefined) throw deliveryNotFound(unknown)
    const checked = new Set<string>()
    for (const [id, webhookId] of webhookOf) {
      if (checked.has(webhookId)) continue
      checked.add(webhookId)
      const webhook = await this.webhooks.getById(webhookId).catch((error: unknown) => {
        if (error instanceof NotFoundError) return null
        throw error
      })
      if (!webhook) throw new ConflictError(`delivery ${id} is of webhook ${webhookId}, which was deleted: there is nowhere to send it`)
      refuseDisabled(webhook)
    }
    return this.requeue(ids)
  }

  /** Operator: redelivers a webhook's failed deliveries, optionally only those created since a time. */
  async redeliverFailed(webhookId: string, since?: number): Promise<string[]> {
    const webhook = await this.webhooks.getById(webhookId)
    refuseDisabled(webhook)
    return this.requeueFailed(webhook, since ?? 0)
  }

  /**
   * Re-queues the customer's failed deliveries of its webhook created at or after `since`, at
   * most RECOVER_WINDOW_MS back (POST /lead-webhooks/{id}/recover, `leads webhooks recover`).
   * Another customer's webhook is a 404; a disabled one a 409, as its deliveries would only be
   * cancelled. Returns how many were queued.
   */
  async recover(customerId: string, webhookId: string, since: number): Promise<number> {
    const webhook = await this.webhooks.get(customerId, webhookId)
    checkRecoverSince(since, this.clock.now())
    if (!webhook.isActive) {
      const enable =
        webhook.disabledBy === 'operator' ? 'only the service operator can enable it again' : 'enable it first (PATCH it with is_active: true), then recover'
      throw new ConflictError(
        `webhook ${webhook.id} is disabled, and a disabled webhook's deliveries are cancelled, not sent: ${enable}`,
        `\`leads webhooks enable ${webhook.id}\`, then recover`,
      )
    }
    return (await this.requeueFailed(webhook, since)).length
  }

  /** A webhook's failed deliveries since a time, page by page (oldest first), each page pinned to its customer and reset as it comes. */
  private async requeueFailed(webhook: Webhook, since: number): Promise<string[]> {
    const queued: string[] = []
    let after: {id: string; createdAt: number} | null = null
    for (;;) {
      const page = await this.store.failedPage(webhook.customerId, webhook.id, since, after, REQUEUE_PAGE)
      queued.push(
        ...(await this.requeue(
          page.map((delivery) => delivery.id),
          {customerId: webhook.customerId, status: 'failed'},
        )),
      )
      if (page.length < REQUEUE_PAGE) return queued
      after = page.at(-1)!
    }
  }

  private async requeue(ids: string[], only?: {customerId: string; status: DeliveryStatus}): Promise<string[]> {
    const reset = await this.store.resetForRedelivery(ids, this.clock.now(), only)
    // The queue is a shortcut; without it the daemon's sweeper picks them up within 2 s.
    await this.queue.enqueue(reset).catch(() => undefined)
    return reset
  }

  private async withAttempts(deliveries: Delivery[]): Promise<DeliveryWithAttempts[]> {
    const attempts = await this.store.attempts.ofDeliveries(deliveries.map((delivery) => delivery.id))
    return deliveries.map((delivery) => ({...delivery, attempts: attempts.filter((attempt) => attempt.deliveryId === delivery.id)}))
  }
}

/**
 * A worker cancels the deliveries of a disabled webhook when it takes them, so queueing them
 * again would turn failed deliveries into cancelled ones instead of sending them.
 */
function refuseDisabled(webhook: Webhook): void {
  if (webhook.isActive) return
  throw new ConflictError(
    `webhook ${webhook.id} is disabled, and a disabled webhook's deliveries are cancelled, not sent`,
    `\`leads webhooks enable ${webhook.id}\`, then redeliver`,
  )
}

/** A delivery id as stored: in lower case, as its X-Service-Delivery header shows it. */
function checkDeliveryId(id: string): string {
  if (!UUID_PATTERN.test(id)) throw new ValidationError(`delivery id must be a UUID, got "${id}"`, 'id')
  return id.toLowerCase()
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
