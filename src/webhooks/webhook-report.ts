import type {DeliveryWithAttempts} from '../deliveries/deliveries-service.js'
import type {StoredEvent} from '../events/events-store.js'
import type {DeliveryStatus} from '../deliveries/delivery-types.js'
import {isoTime, isoTimeOrNull} from '../shared/clock.js'
import type {Webhook} from './webhook-types.js'

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
  created_at: string
  updated_at: string
}

export interface AttemptReport {
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
  attempts_made: number
  last_error: string | null
  created_at: string
  completed_at: string | null
  /** When the next attempt is due; null once the delivery is finished. */
  next_attempt_at: string | null
  attempts: AttemptReport[]
}

/** One delivery in full (`leads deliveries show`): with its event's type, lead and the payload sent as `lead`. */
export interface DeliveryDetailReport extends DeliveryReport {
  event_type: string | null
  lead_id: string | null
  payload: unknown
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
    created_at: isoTime(webhook.createdAt),
    updated_at: isoTime(webhook.updatedAt),
  }
}

export function deliveryReport(delivery: DeliveryWithAttempts): DeliveryReport {
  return {
    id: delivery.id,
    webhook_id: delivery.webhookId,
    customer_id: delivery.customerId,
    event_id: delivery.eventId,
    status: delivery.status,
    attempts_made: delivery.attemptsMade,
    last_error: delivery.lastError,
    created_at: isoTime(delivery.createdAt),
    completed_at: isoTimeOrNull(delivery.completedAt),
    next_attempt_at: FINISHED.has(delivery.status) ? null : isoTime(delivery.nextAttemptAt),
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

/** A delivery with its event, as `leads deliveries show` reports it. */
export function deliveryDetailReport(delivery: DeliveryWithAttempts, event: StoredEvent | null): DeliveryDetailReport {
  return {...deliveryReport(delivery), event_type: event?.type ?? null, lead_id: event?.leadId ?? null, payload: event?.payload ?? null}
}

/** How many of a webhook's latest deliveries its health is computed over, whatever --limit shows. */
export const HEALTH_WINDOW = 100

/** What `leads webhooks inspect` reports: config, health over the latest deliveries, and the most recent ones. */
export interface WebhookInspection {
  webhook: WebhookReport
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

/** The inspection of a webhook: health over `window` (its latest deliveries), and the `recent` ones shown. */
export function inspectionOf(webhook: Webhook, window: DeliveryWithAttempts[], recent: DeliveryWithAttempts[]): WebhookInspection {
  const report = webhookReport(webhook)
  const counted = window.map(deliveryReport)
  const delivered = counted.filter((d) => d.status === 'succeeded').length
  const failed = counted.filter((d) => d.status === 'failed').length
  const failing = counted.filter((d) => !FINISHED.has(d.status) && d.attempts.length > 0 && d.attempts.at(-1)!.outcome !== 'success').length
  const lastAttempt = counted.flatMap((d) => d.attempts).sort((a, b) => b.started_at.localeCompare(a.started_at))[0]
  const judged = delivered + failed + failing
  return {
    webhook: report,
    health: {
      window: HEALTH_WINDOW,
      success_rate: judged === 0 ? null : delivered / judged,
      delivered,
      failed,
      failing,
      consecutive_failures: report.consecutive_failures,
      last_status: lastAttempt ? String(lastAttempt.status_code ?? lastAttempt.error) : null,
      last_success_at: report.last_success_at,
      failing_since: report.failing_since,
    },
    recent: recent.map(deliveryReport),
  }
}

const FINISHED: ReadonlySet<DeliveryStatus> = new Set(['succeeded', 'failed', 'cancelled'])
