import type {BreakerState, DisabledBy, EventType, Webhook} from './webhook-types.js'

/** A webhooks row as the database returns it (times as numbers, or strings on MySQL). */
export interface Row {
  id: string
  customer_id: string
  url: string
  event_types: string
  is_active: number | boolean
  timeout_seconds: number
  retry_attempts: number
  description: string | null
  secret_ciphertext: string
  previous_secret_ciphertext: string | null
  secret_rotated_at: number | string | null
  disabled_reason: string | null
  disabled_by: string | null
  consecutive_failures: number
  failing_since: number | string | null
  last_success_at: number | string | null
  last_failure_at: number | string | null
  max_in_flight: number | null
  breaker_state: string
  breaker_until: number | string | null
  breaker_opened_at: number | string | null
  created_at: number | string
  updated_at: number | string
}

export function toMs(value: number | string | null): number | null {
  return value === null ? null : Number(value)
}

export function toRow(webhook: Webhook): Omit<Row, 'secret_ciphertext' | 'previous_secret_ciphertext' | 'secret_rotated_at'> {
  return {
    id: webhook.id,
    customer_id: webhook.customerId,
    url: webhook.url,
    event_types: webhook.eventTypes.join(','),
    is_active: webhook.isActive,
    timeout_seconds: webhook.timeoutSeconds,
    retry_attempts: webhook.retryAttempts,
    description: webhook.description,
    disabled_reason: webhook.disabledReason,
    disabled_by: webhook.disabledBy,
    consecutive_failures: webhook.consecutiveFailures,
    failing_since: webhook.failingSince,
    last_success_at: webhook.lastSuccessAt,
    last_failure_at: webhook.lastFailureAt,
    max_in_flight: webhook.maxInFlight,
    breaker_state: webhook.breaker.state,
    breaker_until: webhook.breaker.until,
    breaker_opened_at: webhook.breaker.openedAt,
    created_at: webhook.createdAt,
    updated_at: webhook.updatedAt,
  }
}

export function fromRow(row: Row): Webhook {
  return {
    id: row.id,
    customerId: row.customer_id,
    url: row.url,
    eventTypes: row.event_types.split(',').filter(Boolean) as EventType[],
    isActive: Boolean(row.is_active),
    timeoutSeconds: Number(row.timeout_seconds),
    retryAttempts: Number(row.retry_attempts),
    description: row.description,
    disabledReason: row.disabled_reason,
    disabledBy: row.disabled_by as DisabledBy | null,
    consecutiveFailures: Number(row.consecutive_failures),
    failingSince: toMs(row.failing_since),
    lastSuccessAt: toMs(row.last_success_at),
    lastFailureAt: toMs(row.last_failure_at),
    maxInFlight: row.max_in_flight === null ? null : Number(row.max_in_flight),
    breaker: {state: row.breaker_state as BreakerState, until: toMs(row.breaker_until), openedAt: toMs(row.breaker_opened_at)},
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}
