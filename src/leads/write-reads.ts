import type {CustomersStore} from '../customers/customers-store.js'
import {StatementBatch} from '../db/statements.js'
import type {WriteTransaction} from '../db/write-transaction.js'
import {customerSetup, type LeadDraft} from './lead-input.js'
import type {LeadMatchStore} from './lead-match-store.js'
import {matchCandidates, type MatchEntry} from './lead-matching.js'
import type {LeadOwner} from './lead-rows.js'
import type {SetupCache, VersionedSetup} from './setup-cache.js'

/**
 * What a write reads in its transaction, added to the batch of its first round trip: the
 * customer's setup (stages and fields, read again only when its version moved), the match-key
 * locks and the stored leads its drafts match, and the owners of those leads.
 */
export class WriteReads {
  constructor(
    private readonly matches: LeadMatchStore,
    private readonly customers: CustomersStore,
    readonly setups: SetupCache,
  ) {}

  /**
   * Adds the customer's setup version to a write's reads (and its stages and fields when none are
   * kept); the function returned gives the setup and the version read once the reads are sent,
   * the setup read again in the transaction when it changed since it was kept (see SetupCache).
   * A read added to the batch after this one is as new as the version or newer.
   */
  setup(reads: StatementBatch, customerId: string): (trx: WriteTransaction) => Promise<VersionedSetup> {
    const version = reads.read(this.customers.setupVersionRead(customerId))
    const kept = this.setups.get(customerId)
    // Read after the version: a change committed in between makes the kept pair look older, never newer.
    const fresh = kept ? null : this.definitions(reads, customerId)
    let setup: VersionedSetup | null = null
    return async (trx) => {
      if (setup) return setup
      const current = version() ?? 0
      if (kept?.version === current) return (setup = kept)
      const definitions = fresh ?? this.definitions(new StatementBatch(), customerId)
      if (!fresh) await definitions.batch.send(trx)
      setup = {version: current, setup: customerSetup(definitions.stages(), definitions.fields())}
      this.setups.set(customerId, setup)
      return setup
    }
  }

  private definitions(batch: StatementBatch, customerId: string) {
    return {batch, stages: batch.read(this.customers.stagesRead(customerId)), fields: batch.read(this.customers.fieldsRead(customerId))}
  }

  /**
   * The owners of the stored leads a group's creates may merge into, per customer: read in the
   * write's transaction (SQLite's one connection is the transaction's), in one more round trip
   * that only a group with an owned candidate makes.
   */
  async owners(
    trx: WriteTransaction,
    customers: ReadonlyArray<{customerId: string; candidates: readonly MatchEntry[]}>,
  ): Promise<Map<string, Map<string, LeadOwner>>> {
    const batch = new StatementBatch()
    const reads = customers.flatMap(({customerId, candidates}) => {
      const read = this.customers.ownersRead(
        customerId,
        candidates.flatMap((entry) => (entry.lead.ownerId === null ? [] : [entry.lead.ownerId])),
      )
      return read ? [{customerId, owners: batch.read(read)}] : []
    })
    if (reads.length === 0) return new Map()
    await batch.send(trx)
    return new Map(reads.map(({customerId, owners}) => [customerId, owners()]))
  }

  /** Adds the match-key locks and the leads the drafts match to a write's reads. */
  candidates(reads: StatementBatch, customerId: string, drafts: readonly LeadDraft[], lock: boolean): () => MatchEntry[] {
    const {locks, read} = matchCandidates(this.matches, customerId, drafts, lock)
    reads.add(...locks)
    return read ? reads.read(read) : () => []
  }
}
