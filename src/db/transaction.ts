import type {Knex} from 'knex'

import {isDeadlock} from './errors.js'
import type {Db} from './knex.js'

const DEADLOCK_RETRIES = 5

/**
 * Runs `work` in a write transaction, again if InnoDB picks it as a deadlock victim. `work`
 * must not have side effects outside the transaction.
 *
 * On MySQL it runs READ COMMITTED: locking reads then lock only the rows they find (no gap
 * locks, which made unrelated creates deadlock each other) and see the latest committed rows.
 * Writers of one person are serialised by the match-key locks instead (matchCandidates in lead-matching.ts).
 */
export async function inTransaction<T>(db: Db, work: (trx: Knex.Transaction) => Promise<T>, config?: Knex.TransactionConfig): Promise<T> {
  // READ COMMITTED is every MySQL connection's session default (createDb); `config` may ask for another level.
  return retryingDeadlocks(() => db.transaction(work, config))
}

/** Runs `work` (a transaction, or one statement that commits on its own) again while InnoDB picks it as a deadlock victim. */
export async function retryingDeadlocks<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (!isDeadlock(error) || attempt >= DEADLOCK_RETRIES) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt))
    }
  }
}
