import type {DeliveryWithAttempts} from '../deliveries/deliveries-service.js'
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
  attempts: AttemptReport[]
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

/** What `leads webhooks inspect` reports: config, health over the recent deliveries, and those deliveries. */
export interface WebhookInspection {
  webhook: WebhookReport
  health: {
    success_rate: number | null
    delivered: number
    failed: number
    consecutive_failures: number
    last_status: string | null
    last_success_at: string | null
    failing_since: string | null
  }
  recent: DeliveryReport[]
}

export function inspectionOf(webhook: Webhook, recentDeliveries: DeliveryWithAttempts[]): WebhookInspection {
  const report = webhookReport(webhook)
  const recent = recentDeliveries.map(deliveryReport)
  const delivered = recent.filter((d) => d.status === 'succeeded').length
  const failed = recent.filter((d) => d.status === 'failed').length
  const lastAttempt = recent.flatMap((d) => d.attempts).sort((a, b) => b.started_at.localeCompare(a.started_at))[0]
  return {
    webhook: report,
    health: {
      success_rate: delivered + failed === 0 ? null : delivered / (delivered + failed),
      delivered,
      failed,
      consecutive_failures: report.consecutive_failures,
      last_status: lastAttempt ? String(lastAttempt.status_code ?? lastAttempt.error) : null,
      last_success_at: report.last_success_at,
      failing_since: report.failing_since,
    },
    recent,
  }
}
