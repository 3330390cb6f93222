import type {Db} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {insertChunks, runEach, type Statement} from '../db/statements.js'
import type {LeadCountsStore} from './lead-counts-store.js'
import {leadToRow} from './lead-rows.js'
import type {LeadSearchIndex} from './lead-search-index.js'
import type {LeadRecord, LeadWrite} from './lead-types.js'

/** Columns a merge may change; id, customer_id and created_at never change. */
const UPSERT_COLUMNS = [
  'source_platform',
  'source_type',
  'status',
  'updated_at',
  'contact_name',
  'contact_phone',
  'contact_email',
  'email_normalized',
  'phone_digits',
  'phone_last10',
  'stage_id',
  'lead_line',
  'custom_fields',
  'change_seq',
]

/** The statements that write leads, with what derives from them (counts, search words), in the write's transaction. */
export class LeadWriteStatements {
  constructor(
    private readonly db: Db,
    private readonly counts: LeadCountsStore,
    private readonly searchIndex: LeadSearchIndex,
  ) {}

  /** Inserts new leads and overwrites changed ones by id (`before`: the stored state of those that exist), with what derives from them. */
  upsertStatements(leads: readonly LeadRecord[], before: ReadonlyMap<string, LeadRecord>): Statement[] {
    return [...this.upsertRows(leads), ...this.derivedFromUpsert(leads, before)]
  }

  /** upsertStatements' first part: the leads themselves (a bulk request sends them ahead of the rest). */
  upsertRows(leads: readonly LeadRecord[]): Statement[] {
    return insertChunks(this.db, 'leads', leads.map(leadToRow), {keys: ['id'], update: UPSERT_COLUMNS})
  }

  /** upsertStatements' second part: the counts and search words of the leads written. */
  derivedFromUpsert(leads: readonly LeadRecord[], before: ReadonlyMap<string, LeadRecord>): Statement[] {
    return this.derivedWrites(leads.map((after) => ({before: before.get(after.id) ?? null, after})))
  }

  /**
   * Writes leads in their final state (`stored`: the state read in this transaction of those that
   * exist): a plain insert when all are new, else an upsert.
   */
  writeStatements(leads: readonly LeadRecord[], stored: ReadonlyMap<string, LeadRecord>): Statement[] {
    return leads.some((lead) => stored.has(lead.id)) ? this.upsertStatements(leads, stored) : this.insertStatements(leads)
  }

  /** Inserts new leads in a few multi-row statements, with what derives from them. Each joins the change feed's pending set. */
  insertStatements(leads: readonly LeadRecord[]): Statement[] {
    return [...insertChunks(this.db, 'leads', leads.map(leadToRow)), ...this.derivedWrites(leads.map((after) => ({before: null, after})))]
  }

  /** What is derived from the leads (counts, search words), written in the same transaction. */
  private derivedWrites(changes: LeadWrite[]): Statement[] {
    return [...this.counts.apply(changes), ...this.searchIndex.apply(changes)]
  }

  /** Inserts leads with their counts and search words, in one transaction (test seeding and benchmarks). */
  async insertMany(leads: LeadRecord[]): Promise<void> {
    await inTransaction(this.db, (trx) => runEach(trx, this.insertStatements(leads)))
  }
}
