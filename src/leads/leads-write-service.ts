import type {CustomersStore} from '../customers/customers-store.js'
import type {Db} from '../db/knex.js'
import type {DeliveryOutbox} from '../deliveries/outbox.js'
import type {EventsStore} from '../events/events-store.js'
import type {IdempotencyStore} from '../idempotency/idempotency-store.js'
import type {Clock} from '../shared/clock.js'
import {BulkGuess} from './bulk-guess.js'
import {BulkWriter} from './bulk-writer.js'
import {CreateGuess} from './create-guess.js'
import {CreateWriter} from './create-writer.js'
import type {LeadMatchStore} from './lead-match-store.js'
import type {LeadWriteStatements} from './lead-write-statements.js'
import {SetupCache} from './setup-cache.js'
import {WriteReads} from './write-reads.js'
import {type BulkResult, type CreateResult, NO_HOOKS, type WriteHooks} from './write-types.js'

/** What the write path is built from; `createGuess` is LEADS_CREATE_GUESS, `bulkGuess` LEADS_BULK_GUESS. */
interface WriteDependencies {
  db: Db
  matches: LeadMatchStore
  leads: LeadWriteStatements
  customers: CustomersStore
  events: EventsStore
  outbox: DeliveryOutbox
  idempotency: IdempotencyStore
  clock: Clock
  createGuess: boolean
  bulkGuess: boolean
}

/**
 * Pushing leads: single creates (merged by email or phone, grouped per transaction) and bulk
 * requests. Writers lock the match keys of their rows first, so concurrent pushes of one person
 * end as one lead on either backend. How a write is done: docs/design.md, "How a write is done".
 */
export class LeadsWriteService {
  private readonly creates: CreateWriter
  private readonly bulks: BulkWriter
  private readonly bulkGuess: BulkGuess

  constructor({db, matches, leads, customers, events, outbox, idempotency, clock, createGuess, bulkGuess}: WriteDependencies) {
    const setups = new SetupCache()
    const reads = new WriteReads(matches, customers, setups)
    const guess = new CreateGuess(matches, customers, setups, createGuess)
    this.creates = new CreateWriter(db, leads, reads, events, outbox, idempotency, guess, clock)
    this.bulkGuess = new BulkGuess(setups, bulkGuess)
    this.bulks = new BulkWriter(db, leads, reads, idempotency, this.bulkGuess, clock)
  }

  /** How groups of creates were written since start (for the metrics): as new, checked, and guesses refused. */
  get groupsWritten(): CreateWriter['groupsWritten'] {
    return this.creates.groupsWritten
  }

  /** Bulk writes planned on the bulk guess (used) and planned again after their reads (dropped), since start. */
  get bulkGuesses(): BulkGuess['counts'] {
    return this.bulkGuess.counts
  }

  /** Creates a lead or merges it into the customer's matching lead; only a genuine insert records lead.created. */
  create(customerId: string, body: unknown, hooks: WriteHooks<CreateResult> = NO_HOOKS): Promise<CreateResult> {
    return this.creates.create(customerId, body, hooks)
  }

  /** Creates, merges or skips up to 500 rows; rows fail independently; no events. */
  bulk(customerId: string, body: unknown, hooks: WriteHooks<BulkResult> = NO_HOOKS): Promise<BulkResult> {
    return this.bulks.bulk(customerId, body, hooks)
  }
}
