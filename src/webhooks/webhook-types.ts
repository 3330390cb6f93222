export const EVENT_TYPES = ['lead.created'] as const
export type EventType = (typeof EVENT_TYPES)[number]

export const MAX_WEBHOOKS_PER_CUSTOMER = 20

/** Whether `id` has the form of the ids registration gives (`wh_` and 24 hex digits). */
export function isWebhookId(id: string): boolean {
  return /^wh_[0-9a-f]{24}$/.test(id)
}
export type DisabledBy = 'operator' | 'customer' | 'system'

/** Deliveries in flight at once per webhook, unless the operator sets another cap. */
export const DEFAULT_MAX_IN_FLIGHT = 8
export const MAX_IN_FLIGHT_LIMIT = 256

export const BREAKER_STATES = ['closed', 'open', 'half_open'] as const
export type BreakerState = (typeof BREAKER_STATES)[number]

/**
 * A webhook's circuit breaker as every worker sees it (docs/api.md, "Delivery scheduling"):
 * `open` sends nothing until `until`; `half_open` has one probe on the wire, its claim good until
 * `until`; `closed` sends as usual.
 */
export interface Breaker {
  state: BreakerState
  until: number | null
  openedAt: number | null
}

/** A webhook whose deliveries have all failed this long is disabled. */
export const AUTO_DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000

export interface Webhook {
  id: string
  customerId: string
  url: string
  eventTypes: EventType[]
  isActive: boolean
  timeoutSeconds: number
  retryAttempts: number
  description: string | null
  disabledReason: string | null
  /** Who disabled it; an operator's disable can only be undone by an operator. */
  disabledBy: DisabledBy | null
  consecutiveFailures: number
  failingSince: number | null
  lastSuccessAt: number | null
  lastFailureAt: number | null
  /** The operator's cap on deliveries in flight at once; null: DEFAULT_MAX_IN_FLIGHT. */
  maxInFlight: number | null
  breaker: Breaker
  createdAt: number
  updatedAt: number
}

/** The Webhook resource of the API. The secret is never part of it. */
export interface ApiWebhook {
  id: string
  url: string
  event_types: string[]
  is_active: boolean
  timeout_seconds: number
  retry_attempts: number
  description: string | null
  created_at: string
  updated_at: string
}
