export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'failed', 'cancelled'] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

export interface Delivery {
  /** Also the X-Service-Delivery header, the same across attempts and redeliveries. */
  id: string
  customerId: string
  webhookId: string
  eventId: string
  status: DeliveryStatus
  attemptsMade: number
  nextAttemptAt: number
  lastError: string | null
  createdAt: number
  updatedAt: number
  completedAt: number | null
}

/** `final`: failed, and no attempt is left; `terminal`: failed in a way never retried (a redirect, a blocked address). */
export type AttemptOutcome = 'success' | 'retry' | 'final' | 'terminal'

export interface DeliveryAttempt {
  id: string
  deliveryId: string
  attemptNumber: number
  startedAt: number
  durationMs: number
  statusCode: number | null
  error: string | null
  responseSnippet: string | null
  outcome: AttemptOutcome
}
