import {randomUUID} from 'node:crypto'

import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {compile, insertRows, type Statement} from '../db/statements.js'
import {LAST_ERROR_MAX} from './delivery-rows.js'
import type {AttemptOutcome, DeliveryAttempt} from './delivery-types.js'

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

/** SQL for delivery attempts: recording a worker's attempts with their deliveries' counts, and reading them back. */
export class DeliveryAttemptsStore {
  constructor(private readonly db: Db) {}

  /**
   * Records attempts of deliveries this worker holds (at most one per delivery): the statements,
   * for one batch. A delivery in `succeeded` ends in the same statement that counts its attempt;
   * one in `retries` gets its next attempt's due time there.
   */
  recordStatements(
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

  /** The attempts of these deliveries, in the order they started. */
  async ofDeliveries(deliveryIds: string[]): Promise<DeliveryAttempt[]> {
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

  /** Deliveries of these ids that this worker holds. */
  private byHolder(ids: readonly string[], workerId: string): Knex.QueryBuilder {
    return this.db('deliveries')
      .whereIn('id', [...ids])
      .andWhere({claimed_by: workerId})
  }
}
