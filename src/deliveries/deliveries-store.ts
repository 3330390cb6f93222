import {randomUUID} from 'node:crypto'

import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {compile, insertChunks, type Statement} from '../db/statements.js'
import {DeliveryAttemptsStore} from './delivery-attempts-store.js'
import {DeliveryLeasesStore} from './delivery-leases-store.js'
import {type DeliveryRow, deliveryFromRow} from './delivery-rows.js'
import type {Delivery, DeliveryStatus} from './delivery-types.js'

export interface DeliveryFilter {
  webhookId?: string
  status?: DeliveryStatus
  since?: number
  limit?: number
  /** Only deliveries older than this one in the list's order (created_at, then id, both descending): the next page. */
  before?: {createdAt: number; id: string}
}

/**
 * SQL for the delivery outbox: the rows an event's transaction writes, and the listing, tail and
 * redelivery of operators and customers. The workers' leases and the attempts have stores of
 * their own, reached from here.
 */
export class DeliveriesStore {
  readonly leases: DeliveryLeasesStore
  readonly attempts: DeliveryAttemptsStore

  constructor(private readonly db: Db) {
    this.leases = new DeliveryLeasesStore(db)
    this.attempts = new DeliveryAttemptsStore(db)
  }

  /**
   * Pending deliveries (one per event and webhook), marked dispatched now, as the caller enqueues
   * right after commit: their ids and the insert to send in the events' transaction.
   */
  forEvents(deliveries: ReadonlyArray<{customerId: string; eventId: string; webhookId: string; now: number}>): {ids: string[]; statements: Statement[]} {
    const rows = deliveries.map(({customerId, eventId, webhookId, now}) => ({
      id: randomUUID(),
      customer_id: customerId,
      webhook_id: webhookId,
      event_id: eventId,
      status: 'pending',
      attempts_made: 0,
      next_attempt_at: now,
      dispatched_at: now,
      created_at: now,
      updated_at: now,
    }))
    return {ids: rows.map((row) => row.id), statements: insertChunks(this.db, 'deliveries', rows)}
  }

  /** Cancels a webhook's unfinished deliveries: the statement its deletion sends in its transaction. */
  cancelForWebhookStatement(customerId: string, webhookId: string, now: number): Statement {
    return compile(
      this.db('deliveries')
        .where({customer_id: customerId, webhook_id: webhookId})
        .whereIn('status', ['pending', 'delivering'])
        .update({status: 'cancelled', last_error: 'webhook deleted', completed_at: now, updated_at: now}),
    )
  }

  async find(id: string): Promise<Delivery | null> {
    const row = (await this.db('deliveries').where({id}).first()) as DeliveryRow | undefined
    return row ? deliveryFromRow(row) : null
  }

  /** The webhook of each given delivery that exists, in one query. */
  async webhooksOf(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map()
    const rows = (await this.db('deliveries').whereIn('id', ids).select('id', 'webhook_id')) as Array<{id: string; webhook_id: string}>
    return new Map(rows.map((row) => [row.id, row.webhook_id]))
  }

  /**
   * Queues deliveries again with fresh attempts; returns the ids that were reset. One being
   * delivered right now is left alone, also if a worker claims it between the read and the write.
   * `only` pins both statements to one customer and resets only deliveries still in that status.
   */
  async resetForRedelivery(ids: string[], now: number, only?: {customerId: string; status: DeliveryStatus}): Promise<string[]> {
    if (ids.length === 0) return []
    const pinned = (query: Knex.QueryBuilder) => (only ? query.andWhere({customer_id: only.customerId, status: only.status}) : query)
    const existing = (await pinned(this.db('deliveries').whereIn('id', ids).whereNot('status', 'delivering')).select('id')) as Array<{id: string}>
    const reset = existing.map((row) => row.id)
    if (reset.length > 0) {
      await pinned(this.db('deliveries').whereIn('id', reset).whereNot('status', 'delivering')).update({
        status: 'pending',
        attempts_made: 0,
        next_attempt_at: now,
        dispatched_at: null,
        claimed_by: null,
        claimed_until: null,
        completed_at: null,
        last_error: null,
        updated_at: now,
      })
    }
    return reset
  }

  /**
   * One page of a customer's failed deliveries of a webhook created at or after `since`, oldest
   * first, after the position `after` (the last of the previous page): a walk in bounded statements.
   */
  async failedPage(
    customerId: string,
    webhookId: string,
    since: number,
    after: {id: string; createdAt: number} | null,
    limit: number,
  ): Promise<Array<{id: string; createdAt: number}>> {
    const query = this.db('deliveries')
      .where({customer_id: customerId, webhook_id: webhookId, status: 'failed'})
      .andWhere('created_at', '>=', since)
      .orderBy([{column: 'created_at'}, {column: 'id'}])
      .limit(limit)
      .select('id', 'created_at')
    // Keyset as `col > v OR (col = v AND id > i)`: MariaDB ranges the index on it, not on a row constructor.
    if (after)
      query.andWhere((q) =>
        q.where('created_at', '>', after.createdAt).orWhere((same) => same.where('created_at', after.createdAt).andWhere('id', '>', after.id)),
      )
    return ((await query) as Array<{id: string; created_at: number | string}>).map((row) => ({id: row.id, createdAt: Number(row.created_at)}))
  }

  async list(filter: DeliveryFilter): Promise<Delivery[]> {
    const query = this.db('deliveries')
      .orderBy([
        {column: 'created_at', order: 'desc'},
        {column: 'id', order: 'desc'},
      ])
      .limit(filter.limit ?? 50)
    if (filter.webhookId !== undefined) query.where('webhook_id', filter.webhookId)
    if (filter.status !== undefined) query.where('status', filter.status)
    if (filter.since !== undefined) query.where('created_at', '>=', filter.since)
    const before = filter.before
    if (before !== undefined) {
      query.andWhere((q) =>
        q.where('created_at', '<', before.createdAt).orWhere((same) => same.where('created_at', before.createdAt).andWhere('id', '<', before.id)),
      )
    }
    return ((await query) as DeliveryRow[]).map(deliveryFromRow)
  }

  /**
   * Deliveries changed at or after `since` (created, or an attempt recorded), oldest change first,
   * with their event's type and lead: what `leads deliveries tail` follows.
   */
  async changedSince(
    since: number,
    filter: {webhookId?: string; customerId?: string},
    limit: number,
  ): Promise<Array<Delivery & {eventType: string | null; leadId: string | null}>> {
    const query = this.db('deliveries')
      // The event by its customer too: on a sharded cluster the join then stays on the delivery's shard.
      .leftJoin('events', (on) => on.on('events.id', 'deliveries.event_id').andOn('events.customer_id', 'deliveries.customer_id'))
      .where('deliveries.updated_at', '>=', since)
      .select('deliveries.*', 'events.type as event_type', 'events.lead_id as event_lead_id')
      .orderBy([{column: 'deliveries.updated_at'}, {column: 'deliveries.id'}])
      .limit(limit)
    if (filter.webhookId !== undefined) query.where('deliveries.webhook_id', filter.webhookId)
    if (filter.customerId !== undefined) query.where('deliveries.customer_id', filter.customerId)
    const rows = (await query) as Array<DeliveryRow & {event_type: string | null; event_lead_id: string | null}>
    return rows.map((row) => ({...deliveryFromRow(row), eventType: row.event_type, leadId: row.event_lead_id}))
  }

  /** Unfinished deliveries: how many, and when the oldest was created. */
  async backlog(): Promise<{pending: number; oldestCreatedAt: number | null}> {
    const [row] = (await this.db('deliveries')
      .whereIn('status', ['pending', 'delivering'])
      .select(this.db.raw('count(*) as n, min(created_at) as oldest'))) as Array<{n: number | string; oldest: number | string | null}>
    return {pending: Number(row?.n ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest)}
  }
}
