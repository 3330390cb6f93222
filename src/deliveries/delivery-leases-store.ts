import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {retryingDeadlocks} from '../db/transaction.js'
import {compile, type Read, type Statement} from '../db/statements.js'
import {type DeliveryRow, deliveryFromRow, LAST_ERROR_MAX} from './delivery-rows.js'
import type {Delivery, DeliveryStatus} from './delivery-types.js'

/** Ids per statement when many deliveries are released at once. */
const RELEASE_BATCH = 1000

/**
 * SQL for the leases workers hold on deliveries: the claim and its read-back, the heartbeat, the
 * end of a delivery, the hand-back, and what the sweeper finds that no worker holds.
 */
export class DeliveryLeasesStore {
  constructor(private readonly db: Db) {}

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
        (result.rows as unknown as Array<DeliveryRow & {prior_attempts: number | string}>).map((row) => ({
          delivery: deliveryFromRow(row),
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
}
