import {randomUUID} from 'node:crypto'

import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {retryingDeadlocks} from '../db/transaction.js'
import {compile, insertChunks, insertRows, type Read, type Statement} from '../db/statements.js'
import type {AttemptOutcome, Delivery, DeliveryAttempt, DeliveryStatus} from './delivery-types.js'

interface Row {
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

interface AttemptRow {
  id: string
  delivery_id: string
  attempt_number: number
  started_at: number | string
  duration_ms: number
  status_code: number | null
  error: string | null
  response_snippet: string | null
  outcome: string
}

export interface DeliveryFilter {
  webhookId?: string
  status?: DeliveryStatus
  since?: number
  limit?: number
}

const LAST_ERROR_MAX = 500
/** Ids per statement when many deliveries are released at once. */
const RELEASE_BATCH = 1000

/** SQL for the delivery outbox and its attempts. */
export class DeliveriesStore {
  constructor(private readonly db: Db) {}

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

  /**
   * Takes deliveries for one worker until `leaseUntil`: only due pending ones, or ones whose
   * previous worker's lease ran out. The conditional update is what keeps two workers from
   * ever delivering the same attempt; claimedRead then reads back the ones this worker got.
   */
  claimStatement(ids: readonly string[], workerId: string, now: number, leaseUntil: number): Statement {
    return compile(
      this.db('deliveries')
        .whereIn('id', [...ids])
        .andWhere((q) =>
          q
            .where((pending) => pending.where('status', 'pending').andWhere('next_attempt_at', '<=', now))
            .orWhere((stale) => stale.where('status', 'delivering').andWhere('claimed_until', '<', now)),
        )
        .update({status: 'delivering', claimed_by: workerId, claimed_until: leaseUntil, updated_at: now}),
    )
  }

  /** Which of the ids this worker's claim (its id and lease end) got: a subquery for the batch's other reads. */
  claimed(ids: readonly string[], workerId: string, leaseUntil: number): Knex.QueryBuilder {
    return this.db('deliveries')
      .whereIn('id', [...ids])
      .andWhere({claimed_by: workerId, claimed_until: leaseUntil, status: 'delivering'})
  }

  /** The claimed deliveries, each with how many attempts it has on record (attempts are numbered on from there). */
  claimedRead(claimed: Knex.QueryBuilder): Read<Array<{delivery: Delivery; priorAttempts: number}>> {
    const attempts = this.db('delivery_attempts').count('*').where('delivery_attempts.delivery_id', this.db.ref('deliveries.id'))
    return {
      statement: compile(claimed.clone().select('deliveries.*', attempts.as('prior_attempts'))),
      read: (result) =>
        (result.rows as unknown as Array<Row & {prior_attempts: number | string}>).map((row) => ({
          delivery: fromRow(row),
          priorAttempts: Number(row.prior_attempts),
        })),
    }
  }

  /** Extends the leases a worker still holds among `ids`; returns how many it still holds. */
  async renewLeases(ids: readonly string[], workerId: string, leaseUntil: number): Promise<number> {
    return this.db('deliveries')
      .whereIn('id', [...ids])
      .andWhere({claimed_by: workerId, status: 'delivering'})
      .update({claimed_until: leaseUntil})
  }

  /** Which of `ids` this worker still holds (the others were cancelled or taken over). */
  async stillHeld(ids: readonly string[], workerId: string): Promise<Set<string>> {
    const rows = (await this.db('deliveries')
      .whereIn('id', [...ids])
      .andWhere({claimed_by: workerId, status: 'delivering'})
      .select('id')) as Array<{id: string}>
    return new Set(rows.map((row) => row.id))
  }

  async find(id: string): Promise<Delivery | null> {
    const row = (await this.db('deliveries').where({id}).first()) as Row | undefined
    return row ? fromRow(row) : null
  }

  /**
   * Records attempts of deliveries this worker holds (at most one per delivery): the statements,
   * for one batch. A delivery in `succeeded` ends in the same statement that counts its attempt;
   * one in `retries` gets its next attempt's due time there.
   */
  attemptStatements(
    attempts: ReadonlyArray<Omit<DeliveryAttempt, 'id'>>,
    succeeded: ReadonlySet<string>,
    retries: ReadonlyMap<string, number>,
    workerId: string,
    now: number,
  ): Statement[] {
    if (attempts.length === 0) return []
    const rows = attempts.map((attempt) => ({
      id: randomUUID(),
      delivery_id: attempt.deliveryId,
      attempt_number: attempt.attemptNumber,
      started_at: attempt.startedAt,
      duration_ms: attempt.durationMs,
      status_code: attempt.statusCode,
      error: attempt.error?.slice(0, LAST_ERROR_MAX) ?? null,
      response_snippet: attempt.responseSnippet,
      outcome: attempt.outcome,
    }))
    const statements = [insertRows(this.db, 'delivery_attempts', rows)]
    const counted = {attempts_made: this.db.raw('attempts_made + 1'), updated_at: now}
    if (succeeded.size > 0) {
      statements.push(
        compile(
          this.byHolder([...succeeded], workerId).update({
            ...counted,
            status: 'succeeded',
            completed_at: now,
            claimed_by: null,
            claimed_until: null,
            last_error: null,
          }),
        ),
      )
    }
    const others = attempts.map((attempt) => attempt.deliveryId).filter((id) => !succeeded.has(id))
    if (others.length > 0) {
      // Each retry's own due time, in the same statement: the row shows operators the true next attempt.
      const dueTimes =
        retries.size === 0
          ? {}
          : {next_attempt_at: this.db.raw(`CASE id ${[...retries.keys()].map(() => 'WHEN ? THEN ?').join(' ')} ELSE next_attempt_at END`, [...retries].flat())}
      statements.push(compile(this.byHolder(others, workerId).update({...counted, ...dueTimes})))
    }
    return statements
  }

  /** Deliveries of these ids that this worker holds. */
  private byHolder(ids: readonly string[], workerId: string): Knex.QueryBuilder {
    return this.db('deliveries')
      .whereIn('id', [...ids])
      .andWhere({claimed_by: workerId})
  }

  /** Ends a delivery this worker holds: succeeded, failed or cancelled. */
  async finish(
    id: string,
    workerId: string | null,
    status: Exclude<DeliveryStatus, 'pending' | 'delivering'>,
    now: number,
    lastError: string | null,
  ): Promise<void> {
    const query = this.db('deliveries').where({id})
    if (workerId !== null) query.andWhere({claimed_by: workerId})
    await query.update({
      status,
      completed_at: now,
      updated_at: now,
      claimed_by: null,
      claimed_until: null,
      last_error: lastError?.slice(0, LAST_ERROR_MAX) ?? null,
    })
  }

  /**
   * Gives deliveries this worker holds back to the pool, for the sweeper of any worker to take:
   * due at once (the worker is stopping), or keeping their due time (`dueAt` null: parked,
   * because this worker already holds as many of their webhook's deliveries as it keeps).
   */
  async release(ids: readonly string[], workerId: string, now: number, dueAt: number | null): Promise<void> {
    for (let i = 0; i < ids.length; i += RELEASE_BATCH) {
      await retryingDeadlocks(() =>
        this.db('deliveries')
          .whereIn('id', ids.slice(i, i + RELEASE_BATCH))
          .andWhere({claimed_by: workerId, status: 'delivering'})
          .update({
            status: 'pending',
            claimed_by: null,
            claimed_until: null,
            dispatched_at: null,
            updated_at: now,
            ...(dueAt === null ? {} : {next_attempt_at: dueAt}),
          }),
      )
    }
  }

  /** Hands deliveries whose worker died back to the pool, for the sweeper of any worker to take. */
  async releaseExpiredLeases(now: number): Promise<number> {
    return this.db('deliveries')
      .where('status', 'delivering')
      .andWhere('claimed_until', '<', now)
      .update({status: 'pending', claimed_by: null, claimed_until: null, dispatched_at: null, updated_at: now})
  }

  /**
   * Due pending deliveries that no queue will hand out: released (a worker stopped, died or
   * parked them) or dispatched before `lostBefore` and never taken (a queue lost them). At most
   * `perWebhook` of each webhook, taken in turns across webhooks (each one's oldest due first),
   * so one webhook's backlog cannot fill the `limit`.
   */
  async unheld(now: number, lostBefore: number, perWebhook: number, limit: number): Promise<Array<{id: string; webhookId: string}>> {
    const ranked = this.unheldWhere(this.db('deliveries'), now, lostBefore).select(
      'id',
      'webhook_id',
      this.db.raw('ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS turn'),
    )
    const rows = (await this.db.select('id', 'webhook_id').from(ranked.as('due')).where('turn', '<=', perWebhook).orderBy('turn').limit(limit)) as Array<{
      id: string
      webhook_id: string
    }>
    return rows.map((row) => ({id: row.id, webhookId: row.webhook_id}))
  }

  /** Up to `limit` of one webhook's unheld due deliveries (see unheld), oldest due first. */
  async unheldOf(webhook: {customerId: string; id: string}, now: number, lostBefore: number, limit: number): Promise<string[]> {
    const query = this.db('deliveries').where({customer_id: webhook.customerId, webhook_id: webhook.id})
    const rows = (await this.unheldWhere(query, now, lostBefore).orderBy('next_attempt_at').limit(limit).select('id')) as Array<{id: string}>
    return rows.map((row) => row.id)
  }

  private unheldWhere(query: Knex.QueryBuilder, now: number, lostBefore: number): Knex.QueryBuilder {
    return query
      .where('status', 'pending')
      .andWhere('next_attempt_at', '<=', now)
      .andWhere((q) => q.whereNull('dispatched_at').orWhere('dispatched_at', '<', lostBefore))
  }

  /** The given ids that exist, in one query. */
  async existingIds(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return []
    return ((await this.db('deliveries').whereIn('id', ids).select('id')) as Array<{id: string}>).map((row) => row.id)
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
    return ((await query) as Row[]).map(fromRow)
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
    const rows = (await query) as Array<Row & {event_type: string | null; event_lead_id: string | null}>
    return rows.map((row) => ({...fromRow(row), eventType: row.event_type, leadId: row.event_lead_id}))
  }

  async attempts(deliveryIds: string[]): Promise<DeliveryAttempt[]> {
    if (deliveryIds.length === 0) return []
    const rows = (await this.db('delivery_attempts')
      .whereIn('delivery_id', deliveryIds)
      .orderBy([{column: 'started_at'}, {column: 'attempt_number'}])) as AttemptRow[]
    return rows.map((row) => ({
      id: row.id,
      deliveryId: row.delivery_id,
      attemptNumber: Number(row.attempt_number),
      startedAt: Number(row.started_at),
      durationMs: Number(row.duration_ms),
      statusCode: row.status_code === null ? null : Number(row.status_code),
      error: row.error,
      responseSnippet: row.response_snippet,
      outcome: row.outcome as AttemptOutcome,
    }))
  }

  /** Unfinished deliveries: how many, and when the oldest was created. */
  async backlog(): Promise<{pending: number; oldestCreatedAt: number | null}> {
    const [row] = (await this.db('deliveries')
      .whereIn('status', ['pending', 'delivering'])
      .select(this.db.raw('count(*) as n, min(created_at) as oldest'))) as Array<{n: number | string; oldest: number | string | null}>
    return {pending: Number(row?.n ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest)}
  }
}

function fromRow(row: Row): Delivery {
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
