import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {retryingUndone} from '../db/transaction.js'
import {compile, type Read, type Statement, StatementBatch} from '../db/statements.js'
import {sendBatch} from '../db/write-transaction.js'
import type {EventsStore, StoredEvent} from '../events/events-store.js'
import type {WebhooksStore, WebhookWithSecrets} from '../webhooks/webhooks-store.js'
import {type DeliveryRow, deliveryFromRow, LAST_ERROR_MAX} from './delivery-rows.js'
import type {Delivery, DeliveryStatus} from './delivery-types.js'

/** Ids per statement when many deliveries are released at once. */
const RELEASE_BATCH = 1000

/** The stores whose reads a claim sends with it. */
export interface ClaimRelated {
  webhooks: Pick<WebhooksStore, 'withSecretsRead'>
  events: Pick<EventsStore, 'manyRead'>
}

/** What a claim got: the deliveries (each with its attempts on record), and their webhooks and events by id. */
export interface Claimed {
  deliveries: Array<{delivery: Delivery; priorAttempts: number}>
  webhooks: Map<string, WebhookWithSecrets>
  events: Map<string, StoredEvent>
}

/**
 * SQL for the leases workers hold on deliveries: the claim and its read-back, the heartbeat, the
 * end of a delivery, the hand-back, and what the sweeper finds that no worker holds.
 */
export class DeliveryLeasesStore {
  constructor(private readonly db: Db) {}

  /**
   * Takes deliveries for one worker until `leaseUntil` and reads back what sending them needs, in
   * one round trip on MySQL: the claim (an UPDATE that commits on its own), then the deliveries
   * this worker got, with their webhooks and events (read by their own stores' SQL). Only due
   * pending deliveries, or ones whose previous worker's lease ran out, are taken: the conditional
   * update is what keeps two workers from ever delivering the same attempt.
   */
  async claim(ids: readonly string[], workerId: string, now: number, leaseUntil: number, related: ClaimRelated): Promise<Claimed> {
    // Which of the ids this claim got (this worker, this lease end): the subquery of the batch's reads.
    const claimed = this.db('deliveries')
      .whereIn('id', [...ids])
      .andWhere({claimed_by: workerId, claimed_until: leaseUntil, status: 'delivering'})
    const batch = new StatementBatch().add(this.claimStatement(ids, workerId, now, leaseUntil))
    const rows = batch.read(this.claimedRead(claimed))
    const webhooks = batch.read(related.webhooks.withSecretsRead(claimed.clone().select('webhook_id')))
    const events = batch.read(related.events.manyRead(claimed.clone().select('event_id')))
    // The claim commits on its own; a deadlock victim claimed nothing and simply claims again.
    await retryingUndone(() => batch.send({send: (statements) => sendBatch(this.db, statements)}))
    return {deliveries: rows(), webhooks: webhooks(), events: events()}
  }

  private claimStatement(ids: readonly string[], workerId: string, now: number, leaseUntil: number): Statement {
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

  /** The claimed deliveries, each with how many attempts it has on record (attempts are numbered on from there). */
  private claimedRead(claimed: Knex.QueryBuilder): Read<Claimed['deliveries']> {
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
      await retryingUndone(() =>
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
