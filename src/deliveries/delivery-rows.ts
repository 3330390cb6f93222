import type {Delivery, DeliveryStatus} from './delivery-types.js'

/** A deliveries row as the drivers return it (numbers may come back as strings). */
export interface DeliveryRow {
  id: string
  customer_id: string
  webhook_id: string
  event_id: string
  status: string
  attempts_made: number
  next_attempt_at: number | string
  last_error: string | null
  created_at: number | string
  updated_at: number | string
  completed_at: number | string | null
}

/** Characters of an error kept on a delivery or an attempt. */
export const LAST_ERROR_MAX = 500

/** A delivery from its row. */
export function deliveryFromRow(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    customerId: row.customer_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    status: row.status as DeliveryStatus,
    attemptsMade: Number(row.attempts_made),
    nextAttemptAt: Number(row.next_attempt_at),
    lastError: row.last_error,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    completedAt: row.completed_at === null ? null : Number(row.completed_at),
  }
}
