import type {DeliveryWithAttempts} from '../../src/deliveries/deliveries-service.js'
import type {DeliveryStatus} from '../../src/deliveries/delivery-types.js'
import {isoTime, isoTimeOrNull} from '../../src/shared/clock.js'
import type {Column} from '../../src/ui/render.js'
import type {Webhook} from '../../src/webhooks/webhook-types.js'

/** A webhook as the operator commands print it (never its secret). */
export interface WebhookOutput {
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

export interface AttemptOutput {
  attempt: number
  started_at: string
  duration_ms: number
  status_code: number | null
  error: string | null
  outcome: string
  response_snippet: string | null
}

export interface DeliveryOutput {
  id: string
  webhook_id: string
  customer_id: string
  event_id: string
  status: DeliveryStatus
  attempts_made: number
  last_error: string | null
  created_at: string
  completed_at: string | null
  attempts: AttemptOutput[]
}

export function webhookOutput(webhook: Webhook): WebhookOutput {
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

export function deliveryOutput(delivery: DeliveryWithAttempts): DeliveryOutput {
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

export const STATUS_COLORS: Record<DeliveryStatus, string> = {
  pending: 'yellow',
  delivering: 'cyan',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'gray',
}

export const WEBHOOK_COLUMNS: ReadonlyArray<Column<WebhookOutput>> = [
  {header: 'ID', value: (w) => w.id},
  {header: 'CUSTOMER', value: (w) => w.customer_id},
  {header: 'URL', value: (w) => w.url},
  {header: 'STATE', value: (w) => (w.is_active ? 'active' : 'disabled'), color: (w) => (w.is_active ? 'green' : 'red')},
  {header: 'FAILURES', value: (w) => String(w.consecutive_failures), color: (w) => (w.consecutive_failures > 0 ? 'yellow' : undefined)},
  {header: 'LAST SUCCESS', value: (w) => w.last_success_at ?? 'never'},
]

export const DELIVERY_COLUMNS: ReadonlyArray<Column<DeliveryOutput>> = [
  {header: 'ID', value: (d) => d.id},
  {header: 'WEBHOOK', value: (d) => d.webhook_id},
  {header: 'STATUS', value: (d) => d.status, color: (d) => STATUS_COLORS[d.status]},
  {header: 'ATTEMPTS', value: (d) => String(d.attempts.length)},
  {header: 'CREATED', value: (d) => d.created_at},
  {header: 'LAST ERROR', value: (d) => d.last_error ?? '-'},
]
