import type {Breaker} from '../webhooks/webhook-types.js'
import type {Delivery} from './delivery-types.js'

/**
 * Why a delivery is where it is, as operators see it (`leads deliveries show`, `webhooks inspect`,
 * `deliveries tail`):
 * - `waiting`: due, waiting for its turn (a worker's slot, or its webhook's in-flight cap);
 * - `held`: its webhook's circuit breaker is open, so nothing is sent until the next probe;
 * - `backing_off`: an attempt failed and the next one is scheduled;
 * - `delivering`: an attempt is on the wire;
 * - and the three ends, `succeeded`, `failed`, `cancelled`.
 */
export type DeliveryState = 'waiting' | 'held' | 'backing_off' | 'delivering' | 'succeeded' | 'failed' | 'cancelled'

export interface DeliveryStateView {
  state: DeliveryState
  /** When the next attempt can go out at the earliest; null once the delivery ended or while it is on the wire. */
  nextAttemptAt: number | null
}

/**
 * The state of a delivery from its row, its webhook's breaker and whether it is on the wire now
 * (the webhook's in-flight record): the same answer for every reader, without asking a worker.
 */
export function deliveryState(
  delivery: Pick<Delivery, 'status' | 'attemptsMade' | 'nextAttemptAt'>,
  breaker: Breaker,
  onTheWire: boolean,
  now: number,
): DeliveryStateView {
  if (delivery.status === 'succeeded' || delivery.status === 'failed' || delivery.status === 'cancelled') return {state: delivery.status, nextAttemptAt: null}
  if (onTheWire) return {state: 'delivering', nextAttemptAt: null}
  if (delivery.nextAttemptAt > now && delivery.attemptsMade > 0) return {state: 'backing_off', nextAttemptAt: delivery.nextAttemptAt}
  const due = Math.max(delivery.nextAttemptAt, now)
  if (breaker.state !== 'closed') return {state: 'held', nextAttemptAt: Math.max(due, breaker.until ?? due)}
  return {state: 'waiting', nextAttemptAt: due}
}
