import type {Knex} from 'knex'

import type {CustomersStore} from '../customers/customers-store.js'
import type {Db} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {compile, type Read, runEach, type Statement} from '../db/statements.js'
import type {SealedSecrets} from './signing-secrets.js'
import type {Breaker, EventType, Webhook} from './webhook-types.js'
import {fromRow, type Row, toMs, toRow} from './webhook-rows.js'

export type WebhookChanges = Partial<
  Pick<
    Webhook,
    | 'url'
    | 'eventTypes'
    | 'isActive'
    | 'timeoutSeconds'
    | 'retryAttempts'
    | 'description'
    | 'disabledReason'
    | 'disabledBy'
    | 'maxInFlight'
    | 'consecutiveFailures'
    | 'failingSince'
  >
> & {
  /** A rotation: the new sealed secret. The one it replaces becomes the previous secret, rotated at `updatedAt`. */
  newSecretCiphertext?: string
  updatedAt: number
}

/** The customer has its most webhooks already: rolls the registration's transaction back. */
class NoRoom extends Error {}

/** The webhook to change is gone: rolls its key's claim back. */
class Gone extends Error {}

/** A webhook with its secrets, still sealed: what signing a request needs. */
export interface WebhookWithSecrets extends SealedSecrets {
  webhook: Webhook
}

/** Whether a change can change which webhooks an event goes to (the customer's setup, see bumpSetupVersion). */
function changesSubscribers(changes: WebhookChanges): boolean {
  return changes.isActive !== undefined || changes.eventTypes !== undefined
}

/**
 * SQL for webhooks. API reads carry the customer, so another customer's id is "not found";
 * only the operator and the delivery worker look a webhook up by id alone.
 *
 * Which webhooks an event goes to is part of the customer's setup: every insert and delete, and
 * every change of `is_active` or `event_types`, bumps the customer's setup version in the same
 * transaction, so a write that kept the subscribers (CreateGuess) knows they moved.
 */
export class WebhooksStore {
  constructor(
    private readonly db: Db,
    private readonly customers: CustomersStore,
  ) {}

  /**
   * Inserts the webhook unless the customer already has `max`; false when it has. The setup
   * version's bump holds the customer's row for the count and the insert, so concurrent
   * registrations cannot both see room for one more (SQLite serialises write transactions on its
   * own). `claim` (an Idempotency-Key's claim and answer) goes first, before that lock: on MySQL a
   * retry whose first request is still running is refused at once instead of waiting for it.
   */
  async insertWithinLimit(webhook: Webhook, secretCiphertext: string, max: number, claim: readonly Statement[] = []): Promise<boolean> {
    try {
      return await inTransaction(this.db, async (trx) => {
        await runEach(trx, claim)
        await this.customers.bumpSetupVersion(trx, webhook.customerId)
        const [row] = (await trx('webhooks').where({customer_id: webhook.customerId}).count({n: '*'})) as Array<{n: number | string}>
        // Thrown, not returned: the claim must not commit with an answer that was never given.
        if (Number(row?.n ?? 0) >= max) throw new NoRoom()
        await trx('webhooks').insert({...toRow(webhook), secret_ciphertext: secretCiphertext})
        return true
      })
    } catch (error) {
      if (error instanceof NoRoom) return false
      throw error
    }
  }

  async find(customerId: string, id: string): Promise<Webhook | null> {
    const row = (await this.db('webhooks').where({customer_id: customerId, id}).first()) as Row | undefined
    return row ? fromRow(row) : null
  }

  /** Operator lookup by id alone (the CLI acts across customers). */
  async findById(id: string): Promise<Webhook | null> {
    return (await this.findWithSecret(id))?.webhook ?? null
  }

  /** The webhook with its sealed secrets, for sending to it. */
  async findWithSecret(id: string): Promise<WebhookWithSecrets | null> {
    const row = (await this.db('webhooks').where({id}).first()) as Row | undefined
    return row ? withSecrets(row) : null
  }

  /** The webhooks whose ids a subquery selects, with their sealed secrets, by id: a read for a batch. */
  withSecretsRead(ids: Knex.QueryBuilder): Read<Map<string, WebhookWithSecrets>> {
    return {
      statement: compile(this.db('webhooks').whereIn('id', ids)),
      read: (result) => new Map((result.rows as unknown as Row[]).map((row) => [row.id, withSecrets(row)])),
    }
  }

  async list(customerId?: string): Promise<Webhook[]> {
    const query = this.db('webhooks').orderBy([{column: 'created_at'}, {column: 'id'}])
    if (customerId !== undefined) query.where({customer_id: customerId})
    return ((await query) as Row[]).map(fromRow)
  }

  /** The ids of the customer's active webhooks subscribed to `eventType`, as a read a write transaction sends in its batch. */
  subscribersRead(customerId: string, eventType: EventType): Read<string[]> {
    return {
      statement: compile(this.db('webhooks').where({customer_id: customerId, is_active: true}).select('id', 'event_types')),
      read: (result) =>
        (result.rows as Array<{id: string; event_types: string}>).filter((row) => row.event_types.split(',').includes(eventType)).map((row) => row.id),
    }
  }

  async update(customerId: string, id: string, changes: WebhookChanges): Promise<void> {
    if (!changesSubscribers(changes)) {
      await this.db('webhooks').where({customer_id: customerId, id}).update(this.changedRow(changes))
      return
    }
    await inTransaction(this.db, async (trx) => {
      await this.customers.bumpSetupVersion(trx, customerId)
      await trx('webhooks').where({customer_id: customerId, id}).update(this.changedRow(changes))
    })
  }

  private changedRow(changes: WebhookChanges): Record<string, unknown> {
    const row: Record<string, unknown> = {updated_at: changes.updatedAt}
    if (changes.url !== undefined) row['url'] = changes.url
    if (changes.eventTypes !== undefined) row['event_types'] = changes.eventTypes.join(',')
    if (changes.isActive !== undefined) row['is_active'] = changes.isActive
    if (changes.timeoutSeconds !== undefined) row['timeout_seconds'] = changes.timeoutSeconds
    if (changes.retryAttempts !== undefined) row['retry_attempts'] = changes.retryAttempts
    if (changes.description !== undefined) row['description'] = changes.description
    if (changes.disabledReason !== undefined) row['disabled_reason'] = changes.disabledReason
    if (changes.disabledBy !== undefined) row['disabled_by'] = changes.disabledBy
    if (changes.maxInFlight !== undefined) row['max_in_flight'] = changes.maxInFlight
    if (changes.consecutiveFailures !== undefined) row['consecutive_failures'] = changes.consecutiveFailures
    if (changes.failingSince !== undefined) row['failing_since'] = changes.failingSince
    if (changes.newSecretCiphertext !== undefined) {
      // In the row's own statement, so concurrent rotations each retire the secret they replace.
      // MySQL assigns left to right, each assignment seeing the ones before it: the previous
      // secret must be taken before secret_ciphertext changes (SQLite reads the old row anyway).
      row['previous_secret_ciphertext'] = this.db.ref('secret_ciphertext')
      row['secret_ciphertext'] = changes.newSecretCiphertext
      row['secret_rotated_at'] = changes.updatedAt
    }
    return row
  }

  /**
   * Applies `changes` under an Idempotency-Key: `claim` goes first, then the change, then the
   * statements `answer` makes from the webhook as changed (the key's stored response), all in
   * one transaction. Null, with nothing kept, when there is no such webhook.
   */
  async updateAnswered(
    customerId: string,
    id: string,
    changes: WebhookChanges,
    claim: readonly Statement[],
    answer: (webhook: Webhook) => readonly Statement[],
  ): Promise<Webhook | null> {
    try {
      return await inTransaction(this.db, async (trx) => {
        await runEach(trx, claim)
        if (changesSubscribers(changes)) await this.customers.bumpSetupVersion(trx, customerId)
        if ((await trx('webhooks').where({customer_id: customerId, id}).update(this.changedRow(changes))) === 0) throw new Gone()
        const webhook = fromRow((await trx('webhooks').where({customer_id: customerId, id}).first()) as Row)
        await runEach(trx, answer(webhook))
        return webhook
      })
    } catch (error) {
      if (error instanceof Gone) return null
      throw error
    }
  }

  /**
   * Deletes the webhook and, in the same transaction, sends `cancelDeliveries` (the deliveries
   * store's statement that cancels its unfinished deliveries) when there was one to delete.
   */
  async delete(customerId: string, id: string, cancelDeliveries: Statement): Promise<boolean> {
    return inTransaction(this.db, async (trx) => {
      await this.customers.bumpSetupVersion(trx, customerId)
      const removed = await trx('webhooks').where({customer_id: customerId, id}).delete()
      if (removed === 0) return false
      await runEach(trx, [cancelDeliveries])
      return true
    })
  }

  /** Health after deliveries to these webhooks succeeded: the statement, for a batch. */
  successes(ids: readonly string[], now: number): Statement {
    return compile(
      this.db('webhooks')
        .whereIn('id', [...ids])
        .update({consecutive_failures: 0, failing_since: null, last_success_at: now}),
    )
  }

  /** The webhooks of these ids, with their sealed secrets: a worker's look at the webhooks it holds deliveries of. */
  async withSecretsByIds(ids: readonly string[]): Promise<Map<string, WebhookWithSecrets>> {
    if (ids.length === 0) return new Map()
    const rows = (await this.db('webhooks').whereIn('id', [...ids])) as Row[]
    return new Map(rows.map((row) => [row.id, withSecrets(row)]))
  }

  /** Records a breaker state that a worker decided. */
  async setBreaker(webhook: Pick<Webhook, 'customerId' | 'id'>, breaker: Breaker): Promise<void> {
    await this.db('webhooks')
      .where({customer_id: webhook.customerId, id: webhook.id})
      .update({breaker_state: breaker.state, breaker_until: breaker.until, breaker_opened_at: breaker.openedAt})
  }

  /**
   * Takes the probe of an open breaker whose cool-down is over (or of a half-open one whose
   * prober went quiet); true for the one worker that got it.
   */
  async claimProbe(webhook: Pick<Webhook, 'customerId' | 'id'>, now: number, until: number): Promise<boolean> {
    const changed = await this.db('webhooks')
      .where({customer_id: webhook.customerId, id: webhook.id})
      .whereIn('breaker_state', ['open', 'half_open'])
      .andWhere('breaker_until', '<=', now)
      .update({breaker_state: 'half_open', breaker_until: until})
    return changed === 1
  }

  /** Health after a delivery failed for good; returns the webhook as it now stands. */
  async recordFailure(id: string, now: number): Promise<Webhook | null> {
    await this.db('webhooks')
      .where({id})
      .update({
        consecutive_failures: this.db.raw('consecutive_failures + 1'),
        failing_since: this.db.raw('COALESCE(failing_since, ?)', [now]),
        last_failure_at: now,
      })
    return this.findById(id)
  }
}

function withSecrets(row: Row): WebhookWithSecrets {
  return {
    webhook: fromRow(row),
    secretCiphertext: row.secret_ciphertext,
    previousSecretCiphertext: row.previous_secret_ciphertext,
    secretRotatedAt: toMs(row.secret_rotated_at),
  }
}
