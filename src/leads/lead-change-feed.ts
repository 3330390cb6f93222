import type {Knex} from 'knex'

import {type Db, isMysql} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import type {LeadQueryStore} from './lead-query-store.js'
import {type LeadRow, type LeadWithRelations, PENDING, rowToLeadRecord} from './lead-rows.js'

/** A position in a customer's change feed: the last change seen (its number, then its id). */
interface ChangePosition {
  seq: number
  id: string
}

/** A lead as the change feed returns it, with its position. */
interface LeadChange {
  lead: LeadWithRelations
  position: ChangePosition
}

/** Leads numbered per UPDATE … CASE statement of the change feed. */
const NUMBERING_CHUNK = 250

/** Pending changes numbered per transaction: more than a page (100), few enough to hold their row locks briefly. */
const SEQUENCE_BATCH = 1000

/**
 * A customer's change feed (GET /leads?sync=true): its leads in the order they were last written.
 * Writes mark a lead pending; the feed numbers pending leads after their commit (sequencePending).
 */
export class LeadChangeFeed {
  constructor(
    private readonly db: Db,
    private readonly queries: LeadQueryStore,
  ) {}

  /**
   * One page of the change feed: leads in change order after `after`, plus one extra row to tell
   * whether more follow. When the numbered changes run out before the page is full, the
   * customer's pending changes are numbered (see sequencePending) and the page read again.
   */
  async listChanges(customerId: string, after: ChangePosition, updatedSince: number | undefined, limit: number): Promise<LeadChange[]> {
    let rows = await this.readChanges(customerId, after, updatedSince, limit)
    while (rows.length <= limit && (await this.sequencePending(customerId)) > 0) {
      rows = await this.readChanges(customerId, after, updatedSince, limit)
    }
    const leads = await this.queries.withRelations(customerId, rows.map(rowToLeadRecord))
    return leads.map((lead, index) => ({lead, position: {seq: Number(rows[index]!.change_seq), id: lead.id}}))
  }

  private async readChanges(customerId: string, after: ChangePosition, updatedSince: number | undefined, limit: number): Promise<LeadRow[]> {
    const query = this.db('leads').select('leads.*').where('customer_id', customerId).andWhere('change_seq', '>', PENDING)
    if (updatedSince !== undefined) query.andWhere('updated_at', '>=', updatedSince)
    // The expanded keyset form: MySQL does not use a row constructor as an index range.
    query.andWhere((q) => q.where('change_seq', '>', after.seq).orWhere((tie) => tie.where('change_seq', after.seq).andWhere('id', '>', after.id)))
    query.orderBy([{column: 'change_seq'}, {column: 'id'}]).limit(limit + 1)
    return (await query) as LeadRow[]
  }

  /**
   * Numbers up to SEQUENCE_BATCH of the customer's committed pending changes from the customer's
   * change counter, in one short transaction, and returns how many it numbered.
   *
   * Writes only mark a lead pending (change_seq 0), so they never wait on each other for the
   * feed. Numbering happens after their commit: the counter row serialises the customer's
   * numbering transactions, so the numbers of one are committed before the next hands out larger
   * ones, and a reader that has seen n has seen every change numbered up to n. A write still open
   * is skipped (SKIP LOCKED) and numbered once it commits, above anything a reader has seen.
   */
  async sequencePending(customerId: string): Promise<number> {
    // A plain read first: a reader at the tail of a quiet feed takes no lock at all.
    const anyPending = await this.db('leads').where({customer_id: customerId, change_seq: PENDING}).first('id')
    if (!anyPending) return 0
    return inTransaction(this.db, async (trx) => {
      // The pending leads in index order (no sort of a large backlog), numbered oldest change first.
      const query = trx('leads').where({customer_id: customerId, change_seq: PENDING}).orderBy('id').limit(SEQUENCE_BATCH).select('id', 'updated_at')
      if (isMysql(this.db)) query.forUpdate().skipLocked()
      const pending = ((await query) as Array<{id: string; updated_at: number | string}>)
        .map((row) => ({id: row.id, updatedAt: Number(row.updated_at)}))
        .sort((a, b) => a.updatedAt - b.updatedAt || (a.id < b.id ? -1 : 1))
      if (pending.length === 0) return 0
      // Taken after the leads are locked: the counter row is held only for the numbering and the commit.
      const first = (await this.bumpChangeSequence(trx, customerId, pending.length)) - pending.length + 1
      for (let start = 0; start < pending.length; start += NUMBERING_CHUNK) {
        const chunk = pending.slice(start, start + NUMBERING_CHUNK)
        await trx('leads')
          .where('customer_id', customerId)
          .whereIn(
            'id',
            chunk.map((lead) => lead.id),
          )
          .update({
            change_seq: trx.raw(
              `CASE id ${chunk.map(() => 'WHEN ? THEN ?').join(' ')} END`,
              chunk.flatMap((lead, index) => [lead.id, first + start + index]),
            ),
          })
      }
      return pending.length
    })
  }

  /** Adds `count` to the customer's change counter and returns its new value, in one round trip (the row stays locked until commit). */
  private async bumpChangeSequence(trx: Knex.Transaction, customerId: string, count: number): Promise<number> {
    if (isMysql(this.db)) {
      // LAST_INSERT_ID(expr) hands the new value back in the statement's OK packet: no SELECT while the row is locked.
      const [result] = (await trx.raw(
        'INSERT INTO lead_change_sequences (customer_id, last_seq) VALUES (?, ?) ON DUPLICATE KEY UPDATE last_seq = LAST_INSERT_ID(last_seq + ?)',
        [customerId, count, count],
      )) as [{insertId: number; affectedRows: number}]
      // One affected row: the customer's first numbering inserted the counter at `count`.
      return result.affectedRows === 1 ? count : Number(result.insertId)
    }
    const [row] = (await trx.raw(
      'INSERT INTO lead_change_sequences (customer_id, last_seq) VALUES (?, ?) ON CONFLICT (customer_id) DO UPDATE SET last_seq = last_seq + ? RETURNING last_seq',
      [customerId, count, count],
    )) as Array<{last_seq: number | string}>
    return Number(row!.last_seq)
  }
}
