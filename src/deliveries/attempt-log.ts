import type {Db} from '../db/knex.js'
import type {Statement} from '../db/statements.js'
import {inWriteTransaction} from '../db/write-transaction.js'
import type {Clock} from '../shared/clock.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import type {DeliveryAttemptsStore} from './delivery-attempts-store.js'
import type {DeliveryAttempt} from './delivery-types.js'

/**
 * An attempt to record; `succeededFor` (the webhook) when it delivered, which ends the delivery;
 * `retryAt` when the delivery's next attempt is scheduled.
 */
interface AttemptEntry {
  attempt: Omit<DeliveryAttempt, 'id'>
  succeededFor?: string
  retryAt?: number
}

/** Entries written per transaction at most. */
const BATCH_MAX = 500

/**
 * Records a worker's delivery attempts in batches, group-commit style: an entry that finds the
 * log idle is written at once, and the entries that arrive meanwhile go together in the next
 * transaction (one round trip on MySQL). A successful attempt also ends its delivery and clears
 * its webhook's failure streak in that transaction. record() resolves once the entry is committed.
 */
export class AttemptLog {
  private waiting: Array<AttemptEntry & {settle: (error?: unknown) => void}> = []
  private writing = false

  constructor(
    private readonly db: Db,
    private readonly attempts: DeliveryAttemptsStore,
    private readonly webhooks: WebhooksStore,
    private readonly workerId: string,
    private readonly clock: Clock,
  ) {}

  record(entry: AttemptEntry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({...entry, settle: (error) => (error === undefined ? resolve() : reject(error))})
      if (!this.writing) void this.drain()
    })
  }

  private async drain(): Promise<void> {
    this.writing = true
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, BATCH_MAX)
      try {
        const statements = this.statements(batch)
        await inWriteTransaction(this.db, async () => ({value: undefined, commitWith: statements}))
        for (const entry of batch) entry.settle()
      } catch (error) {
        for (const entry of batch) entry.settle(error)
      }
    }
    this.writing = false
  }

  private statements(batch: readonly AttemptEntry[]): Statement[] {
    const now = this.clock.now()
    const succeeded = batch.filter((entry) => entry.succeededFor !== undefined)
    const retries = new Map(batch.flatMap((entry) => (entry.retryAt === undefined ? [] : [[entry.attempt.deliveryId, entry.retryAt] as const])))
    const statements = this.attempts.recordStatements(
      batch.map((entry) => entry.attempt),
      new Set(succeeded.map((entry) => entry.attempt.deliveryId)),
      retries,
      this.workerId,
      now,
    )
    if (succeeded.length > 0) statements.push(this.webhooks.successes([...new Set(succeeded.map((entry) => entry.succeededFor!))], now))
    return statements
  }
}
