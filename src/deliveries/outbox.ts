import type {Read, Statement} from '../db/statements.js'
import type {Logger} from '../log/logger.js'
import type {EventType} from '../webhooks/webhook-types.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import type {DeliveriesStore} from './deliveries-store.js'
import type {DispatchQueue} from './dispatch-queue.js'

/**
 * The write side of webhook delivery: one delivery row per active subscribed webhook, written in
 * the event's transaction, and enqueued after commit. An enqueue that fails loses nothing: the
 * sweeper finds the row in the database and dispatches it again.
 */
export class DeliveryOutbox {
  constructor(
    private readonly webhooks: WebhooksStore,
    private readonly deliveries: DeliveriesStore,
    private readonly queue: DispatchQueue,
    private readonly logger?: Logger,
  ) {}

  /** Which webhooks an event of `type` goes to: read in the write's transaction, before record(). */
  subscribersRead(customerId: string, type: EventType): Read<string[]> {
    return this.webhooks.subscribersRead(customerId, type)
  }

  /** The deliveries of events to their subscribers: their ids, for dispatch() after commit, and the statements that record them. */
  record(events: ReadonlyArray<{event: {id: string; customerId: string; createdAt: number}; webhookIds: readonly string[]}>): {
    ids: string[]
    statements: Statement[]
  } {
    return this.deliveries.forEvents(
      events.flatMap(({event, webhookIds}) =>
        webhookIds.map((webhookId) => ({customerId: event.customerId, eventId: event.id, webhookId, now: event.createdAt})),
      ),
    )
  }

  async dispatch(deliveryIds: readonly string[]): Promise<void> {
    if (deliveryIds.length === 0) return
    try {
      await this.queue.enqueue(deliveryIds)
    } catch (error) {
      this.logger?.warn({err: error, deliveries: deliveryIds.length}, 'enqueue failed; the sweeper will dispatch these deliveries')
    }
  }
}
