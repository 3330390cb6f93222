import type {DeliveryWithAttempts, WebhookScheduling} from '../deliveries/deliveries-service.js'
import type {DeliveryState, DeliveryStateView} from '../deliveries/delivery-state.js'
import type {StoredEvent} from '../events/events-store.js'
import type {DeliveryStatus} from '../deliveries/delivery-types.js'
import {isoTime, isoTimeOrNull} from '../shared/clock.js'
import {type Breaker, type BreakerState, DEFAULT_MAX_IN_FLIGHT, type Webhook} from './webhook-types.js'

/** A webhook's circuit breaker as operators see it (webhook-types.ts, Breaker). */
export interface BreakerReport {
  state: BreakerState
  /** open: when the cool-down ends and one probe may go; half_open: until when the probe's claim holds. */
  until: string | null
  opened_at: string | null
}

/** A webhook as operators see it (never its secret). */
export interface WebhookReport {
  id: string
  customer_id: string
  url: string
  event_types: string[]
  is_active: boolean
  disabled_reason: string | null
  timeout_seconds: number
  retry_attempts: number
  description: string | null
  consecutive_failures: number
  failing_since: string | null
  last_success_at: string | null
  last_failure_at: string | null
  /** The cap on deliveries in flight at once in force: the operator's override, else the default. */
  max_in_flight: number
  /** The operator's cap (`leads webhooks limit`); null: the default applies. */
  max_in_flight_override: number | null
  breaker: BreakerReport
  created_at: string
  updated_at: string
}

interface AttemptReport {
  attempt: number
  started_at: string
  duration_ms: number
  status_code: number | null
  error: string | null
  outcome: string
  response_snippet: string | null
}

export interface DeliveryReport {
  id: string
  webhook_id: string
  customer_id: string
  event_id: string
  status: DeliveryStatus
  /** Where it stands for an operator (delivery-state.ts): waiting, held, backing_off, delivering, or how it ended. */
  state: DeliveryState
  /** Every attempt on record, earlier rounds included: the length of `attempts`, the ATTEMPTS column. */
  attempts_made: number
  /**
   * The attempts since it was last queued (created, or redelivered/recovered: a redelivery keeps
   * the earlier attempts but starts a fresh round); retries stop when it reaches retry_attempts + 1.
   */
  attempts_since_queued: number
  last_error: string | null
  created_at: string
  completed_at: string | null
  /** When the next attempt can go out at the earliest; null once the delivery ended or while an attempt is on the wire. */
  next_attempt_at: string | null
  attempts: AttemptReport[]
}

/** How a webhook's deliveries are being sent now: its breaker, and its deliveries on the wire out of its cap. */
export interface SchedulingReport {
  breaker: BreakerReport
  in_flight: number
  max_in_flight: number
}

/** One delivery in full (`leads deliveries show`): with its event's type, lead and the payload sent as `lead`. */
export interface DeliveryDetailReport extends DeliveryReport {
  event_type: string | null
  lead_id: string | null
  payload: unknown
  /** How its webhook is sending now; null when the webhook was deleted. */
  webhook_scheduling: SchedulingReport | null
}

export function webhookReport(webhook: Webhook): WebhookReport {
  return {
    id: webhook.id,
    customer_id: webhook.customerId,
    url: webhook.url,
    event_types: webhook.eventTypes,
    is_active: webhook.isActive,
    disabled_reason: webhook.disabledReason,
    timeout_seconds: webhook.timeoutSeconds,
    retry_attempts: webhook.retryAttempts,
    description: webhook.description,
    consecutive_failures: webhook.consecutiveFailures,
    failing_since: isoTimeOrNull(webhook.failingSince),
    last_success_at: isoTimeOrNull(webhook.lastSuccessAt),
    last_failure_at: isoTimeOrNull(webhook.lastFailureAt),
    max_in_flight: webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
    max_in_flight_override: webhook.maxInFlight,
    breaker: breakerReport(webhook.breaker),
    created_at: isoTime(webhook.createdAt),
    updated_at: isoTime(webhook.updatedAt),
  }
}

function breakerReport(breaker: Breaker): BreakerReport {
  return {state: breaker.state, until: isoTimeOrNull(breaker.until), opened_at: isoTimeOrNull(breaker.openedAt)}
}

function schedulingReport(scheduling: WebhookScheduling): SchedulingReport {
  return {breaker: breakerReport(scheduling.breaker), in_flight: scheduling.inFlight, max_in_flight: scheduling.maxInFlight}
}

/** A delivery as operators see it, with where it stands (`view`, from DeliveriesService.states). */
export function deliveryReport(delivery: DeliveryWithAttempts, view: DeliveryStateView): DeliveryReport {
  return {
    id: delivery.id,
    webhook_id: delivery.webhookId,
    customer_id: delivery.customerId,
    event_id: delivery.eventId,
    status: delivery.status,
    state: view.state,
    attempts_made: delivery.attempts.length,
    attempts_since_queued: delivery.attemptsMade,
    last_error: delivery.lastError,
    created_at: isoTime(delivery.createdAt),
    completed_at: isoTimeOrNull(delivery.completedAt),
    next_attempt_at: isoTimeOrNull(view.nextAttemptAt),
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attemptNumber,
      started_at: isoTime(attempt.startedAt),
      duration_ms: attempt.durationMs,
      status_code: attempt.statusCode,
      error: attempt.error,
      outcome: attempt.outcome,
      response_snippet: attempt.responseSnippet,
    })),
  }
}

/** A delivery with its event and its webhook's scheduling, as `leads deliveries show` reports it. */
export function deliveryDetailReport(
  delivery: DeliveryWithAttempts,
  view: DeliveryStateView,
  event: StoredEvent | null,
  scheduling: WebhookScheduling | null,
): DeliveryDetailReport {
  return {
    ...deliveryReport(delivery, view),
    event_type: event?.type ?? null,
    lead_id: event?.leadId ?? null,
    payload: event?.payload ?? null,
    webhook_scheduling: scheduling && schedulingReport(scheduling),
  }
}

/** How many of a webhook's latest deliveries its health is computed over, whatever --limit shows. */
export const HEALTH_WINDOW = 100

/** What `leads webhooks inspect` reports: config, how it is sending now, health over the latest deliveries, and the most recent ones. */
export interface WebhookInspection {
  webhook: WebhookReport
  scheduling: SchedulingReport
  health: {
    /** Over the last HEALTH_WINDOW deliveries: succeeded / (succeeded + failed + failing). */
    window: number
    success_rate: number | null
    delivered: number
    failed: number
    /** Not finished, and their last attempt failed: failing now, still being retried. */
    failing: number
    consecutive_failures: number
    last_status: string | null
    last_success_at: string | null
    failing_since: string | null
  }
  recent: DeliveryReport[]
}

/**
 * The inspection of a webhook: its scheduling now, health over `window` (its latest deliveries),
 * and the `recent` ones shown, each with where it stands (`states`, from DeliveriesService.states).
 */
export function inspectionOf(
  webhook: Webhook,
  scheduling: WebhookScheduling,
  window: DeliveryWithAttempts[],
  recent: DeliveryWithAttempts[],
  states: ReadonlyMap<string, DeliveryStateView>,
): WebhookInspection {
  const report = webhookReport(webhook)
  const delivered = window.filter((d) => d.status === 'succeeded').length
  const failed = window.filter((d) => d.status === 'failed').length
  const failing = window.filter((d) => !FINISHED.has(d.status) && d.attempts.length > 0 && d.attempts.at(-1)!.outcome !== 'success').length
  const lastAttempt = window.flatMap((d) => d.attempts).sort((a, b) => b.startedAt - a.startedAt)[0]
  const judged = delivered + failed + failing
  return {
    webhook: report,
    scheduling: schedulingReport(scheduling),
    health: {
      window: HEALTH_WINDOW,
      success_rate: judged === 0 ? null : delivered / judged,
      delivered,
      failed,
      failing,
      consecutive_failures: report.consecutive_failures,
      last_status: lastAttempt ? String(lastAttempt.statusCode ?? lastAttempt.error) : null,
      last_success_at: report.last_success_at,
      failing_since: report.failing_since,
    },
    recent: recent.map((delivery) => deliveryReport(delivery, stateOf(states, delivery))),
  }
}

/** The delivery's view in `states`, which holds every delivery being reported (a missing one is a bug, not data). */
export function stateOf(states: ReadonlyMap<string, DeliveryStateView>, delivery: DeliveryWithAttempts): DeliveryStateView {
  const view = states.get(delivery.id)
  if (!view) throw new Error(`no state read for delivery ${delivery.id}`)
  return view
}

const FINISHED: ReadonlySet<DeliveryStatus> = new Set(['succeeded', 'failed', 'cancelled'])
