import type {Knex} from 'knex'

import {isDeadlock} from './errors.js'
import type {Db} from './knex.js'

const DEADLOCK_RETRIES = 5

/**
 * Runs `work` in a transaction, running it again when InnoDB picks it as a deadlock victim
 * (concurrent writers of overlapping match keys can meet in index gaps). `work` must not
 * have side effects outside the transaction.
 */
export async function inTransaction<T>(db: Db, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work)
    } catch (error) {
      if (!isDeadlock(error) || attempt >= DEADLOCK_RETRIES) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt))
    }
  }
}
