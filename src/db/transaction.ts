import type {Knex} from 'knex'

import {isConnectionLost, isDeadlock, LostBeforeCommit, wasNeverSent, WriteOutcomeUnknown} from './errors.js'
import type {Db} from './knex.js'

const ATTEMPTS = 5

/**
 * Runs `work` in a write transaction, again if it was undone (retryingUndone). `work` must not
 * have side effects outside the transaction.
 *
 * On MySQL it runs READ COMMITTED: locking reads then lock only the rows they find (no gap
 * locks, which made unrelated creates deadlock each other) and see the latest committed rows.
 * Writers of one person are serialised by the match-key locks instead (matchCandidates in lead-matching.ts).
 */
export async function inTransaction<T>(db: Db, work: (trx: Knex.Transaction) => Promise<T>, config?: Knex.TransactionConfig): Promise<T> {
  // READ COMMITTED is every MySQL connection's session default (createDb); `config` may ask for another level.
  return retryingUndone(async () => {
    // knex sends the COMMIT once `work` has returned.
    let committing = false
    try {
      return await db.transaction(async (trx) => {
        const value = await work(trx)
        committing = true
        return value
      }, config)
    } catch (error) {
      throw lostAt(error, committing)
    }
  })
}

/**
 * What a transaction's failure means once its connection broke: nothing committed while the
 * COMMIT had not gone out (LostBeforeCommit, run again), unknown once it had (WriteOutcomeUnknown).
 * Any other failure stands as it is.
 */
export function lostAt(error: unknown, commitSent: boolean): unknown {
  if (!isConnectionLost(error)) return error
  return commitSent && !wasNeverSent(error) ? new WriteOutcomeUnknown(error) : new LostBeforeCommit(error)
}

/**
 * Runs `work` (a transaction, or one statement that commits on its own) again while it fails
 * in a way that undid all of it, up to five attempts: InnoDB picked it as a deadlock victim (on
 * Galera also a certification conflict with another node's write), or its connection broke
 * before the COMMIT went out (LostBeforeCommit; the next attempt takes a fresh connection).
 */
export async function retryingUndone<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (attempt >= ATTEMPTS) throw error
      if (isDeadlock(error)) await pause(Math.random() * 5 * attempt)
      // A server that just died or a balancer moving to the next node: give it a moment.
      else if (error instanceof LostBeforeCommit) await pause(50 * 2 ** attempt)
      else throw error
    }
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
