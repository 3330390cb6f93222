import {isoTime, isoTimeOrNull} from '../shared/clock.js'
import type {DeliveriesStore} from './deliveries-store.js'
import type {DeliveryState, DeliveryStateView} from './delivery-state.js'
import type {Delivery, DeliveryStatus} from './delivery-types.js'

/** One line of `leads deliveries tail`: a delivery queued, or one of its attempts finished. */
export interface TailEntry {
  at: string
  delivery_id: string
  webhook_id: string
  event_type: string | null
  lead_id: string | null
  /** 0 for a delivery just queued. */
  attempt: number
  /** The HTTP status, the error, or `queued`. */
  result: string
  duration_ms: number | null
  outcome: string
  delivery_status: DeliveryStatus
  /** Where the delivery stands as of this poll (delivery-state.ts), which may be past the event the entry reports. */
  state: DeliveryState
  /** When the delivery's next attempt can go out at the earliest, as of this poll; null once it ended or while an attempt is on the wire. */
  next_attempt_at: string | null
}

/** What every entry of one delivery has in common. */
type Shared = Pick<TailEntry, 'delivery_id' | 'webhook_id' | 'event_type' | 'lead_id' | 'delivery_status' | 'state' | 'next_attempt_at'>

/** Where each delivery stands (DeliveriesService.states). */
type ReadStates = (deliveries: readonly Delivery[]) => Promise<ReadonlyMap<string, DeliveryStateView>>

/**
 * Deliveries changed this long before the last change seen are read again: attempts are recorded
 * in batches (group commit), so one committed a moment later can carry an earlier time.
 */
const LOOKBACK_MS = 5_000
const BATCH = 500

/**
 * Follows deliveries as they happen: each poll returns what was queued and each attempt finished
 * since the previous poll, once, oldest first. It reads the deliveries changed since then (an
 * index range on updated_at) and their attempts; what it has shown is remembered for the lookback.
 */
export class DeliveryTail {
  private since: number
  private readonly shown = new Map<string, number>()

  constructor(
    private readonly store: DeliveriesStore,
    private readonly readStates: ReadStates,
    private readonly filter: {webhookId?: string; customerId?: string},
    start: number,
  ) {
    this.since = start
  }

  async poll(): Promise<TailEntry[]> {
    // Only what happened in the window is shown; what is older was shown before, or predates the tail.
    const from = this.since - LOOKBACK_MS
    const changed = await this.store.changedSince(from, this.filter, BATCH)
    if (changed.length === 0) return []
    const attempts = await this.store.attempts.ofDeliveries(changed.map((delivery) => delivery.id))
    const found: Array<{delivery: (typeof changed)[number]; time: number; entry: Omit<TailEntry, keyof Shared>}> = []
    for (const delivery of changed) {
      if (delivery.createdAt >= from && this.firstTime(`queued:${delivery.id}`, delivery.createdAt)) {
        found.push({
          delivery,
          time: delivery.createdAt,
          entry: {at: isoTime(delivery.createdAt), attempt: 0, result: 'queued', duration_ms: null, outcome: 'queued'},
        })
      }
      for (const attempt of attempts.filter((candidate) => candidate.deliveryId === delivery.id)) {
        const finished = attempt.startedAt + attempt.durationMs
        if (finished < from || !this.firstTime(attempt.id, finished)) continue
        const result = attempt.statusCode === null ? (attempt.error ?? 'error') : String(attempt.statusCode)
        found.push({
          delivery,
          time: finished,
          entry: {at: isoTime(finished), attempt: attempt.attemptNumber, result, duration_ms: attempt.durationMs, outcome: attempt.outcome},
        })
      }
    }
    // States only of the deliveries shown: each costs a look at its webhook and its in-flight record.
    const states = await this.readStates([...new Set(found.map(({delivery}) => delivery))])
    const entries = found.map(({delivery, time, entry}) => {
      const view = states.get(delivery.id)!
      const shared: Shared = {
        delivery_id: delivery.id,
        webhook_id: delivery.webhookId,
        event_type: delivery.eventType,
        lead_id: delivery.leadId,
        delivery_status: delivery.status,
        state: view.state,
        next_attempt_at: isoTimeOrNull(view.nextAttemptAt),
      }
      return {time, entry: {...shared, ...entry}}
    })
    this.since = Math.max(this.since, changed.at(-1)!.updatedAt)
    this.forgetBefore(this.since - LOOKBACK_MS)
    return entries.sort((a, b) => a.time - b.time).map(({entry}) => entry)
  }

  /** True the first time `key` is seen; remembers it with the time of what it names. */
  private firstTime(key: string, at: number): boolean {
    if (this.shown.has(key)) return false
    this.shown.set(key, at)
    return true
  }

  private forgetBefore(time: number): void {
    for (const [key, at] of this.shown) if (at < time) this.shown.delete(key)
  }
}
