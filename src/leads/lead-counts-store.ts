import {type Db, isMysql} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import type {Statement} from '../db/statements.js'
import type {LeadLine} from '../customers/customer-types.js'
import type {CustomersStore} from '../customers/customers-store.js'
import type {LeadRecord, LeadStatus, LeadWrite} from './lead-types.js'

/** The equality filters a kept count answers; any combination of them, or none. */
interface CountedFilters {
  status?: LeadStatus
  stageId?: string
  leadLine?: LeadLine
}

/**
 * Slots per counter on MySQL. A write adds to the slot of its connection (CONNECTION_ID() mod
 * SLOTS), so concurrent transactions of one customer, each on its own pooled connection, add to
 * different rows and do not queue on one another's row lock until commit; reads sum the slots.
 * A pool's connections get nearby ids, so 64 slots keep one daemon's 16 connections apart.
 */
const SLOTS = 64

/** lead_line is part of the key, where NULL cannot be: '' stands for a lead without one. */
const NO_LEAD_LINE = ''

/**
 * Kept counts of a customer's leads per (status, stage, lead line), changed in the same
 * transaction as the leads themselves, so `total` for no filter or any combination of equality
 * filters is a sum over a few hundred rows instead of a COUNT(*) over up to millions.
 */
export class LeadCountsStore {
  constructor(
    private readonly db: Db,
    private readonly customers: CustomersStore,
  ) {}

  /** The count changes of written leads: statements for their transaction. */
  apply(changes: readonly LeadWrite[]): Statement[] {
    const deltas = new Map<string, {customer_id: string; status: string; stage_id: string; lead_line: string; n: number}>()
    const add = (lead: LeadRecord, n: number) => {
      const leadLine = lead.leadLine ?? NO_LEAD_LINE
      const key = `${lead.customerId}\u0000${lead.status}\u0000${lead.stageId}\u0000${leadLine}`
      const current = deltas.get(key)
      if (current) current.n += n
      else deltas.set(key, {customer_id: lead.customerId, status: lead.status, stage_id: lead.stageId, lead_line: leadLine, n})
    }
    for (const {before, after} of changes) {
      if (before) add(before, -1)
      add(after, 1)
    }
    // Sorted, so two transactions that share a slot lock its rows in the same order.
    const rows = [...deltas.entries()]
      .filter(([, row]) => row.n !== 0)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, row]) => row)
    if (rows.length === 0) return []
    const values = rows.map(() => (isMysql(this.db) ? '(?, ?, ?, ?, CONNECTION_ID() % ?, ?)' : '(?, ?, ?, ?, ?, ?)')).join(', ')
    const bindings = rows.flatMap((row) => [row.customer_id, row.status, row.stage_id, row.lead_line, isMysql(this.db) ? SLOTS : 0, row.n])
    const upsert = isMysql(this.db)
      ? 'ON DUPLICATE KEY UPDATE n = n + VALUES(n)'
      : 'ON CONFLICT (customer_id, status, stage_id, lead_line, slot) DO UPDATE SET n = n + excluded.n'
    return [{sql: `INSERT INTO lead_counts (customer_id, status, stage_id, lead_line, slot, n) VALUES ${values} ${upsert}`, bindings}]
  }

  /** How many of the customer's leads match the equality filters (none: all of them). */
  async total(customerId: string, filters: CountedFilters): Promise<number> {
    const query = this.db('lead_counts').sum({total: 'n'}).where('customer_id', customerId)
    if (filters.status !== undefined) query.where('status', filters.status)
    if (filters.stageId !== undefined) query.where('stage_id', filters.stageId)
    if (filters.leadLine !== undefined) query.where('lead_line', filters.leadLine)
    const [row] = (await query) as Array<{total: number | string | null}>
    return Number(row?.total ?? 0)
  }

  /**
   * Rebuilds the counts of one customer, or of every customer, from the leads themselves; for
   * data written around the service (a restore, a seed) or a suspected drift. Returns the
   * customers rebuilt. Each customer is rebuilt in its own transaction with its leads read
   * locked (MySQL), so writes of that customer wait for the rebuild rather than being lost.
   */
  async recount(customerId?: string): Promise<number> {
    const customers = customerId === undefined ? await this.customers.customerIds() : [customerId]
    for (const id of customers) {
      // REPEATABLE READ (not the session's READ COMMITTED): the share lock then covers the gaps
      // too, so no lead of the customer can be inserted between the count and the rewrite.
      await inTransaction(
        this.db,
        async (trx) => {
          const counted = trx('leads')
            .where('customer_id', id)
            .select('status', 'stage_id', trx.raw(`COALESCE(lead_line, '${NO_LEAD_LINE}') AS lead_line`))
            .count({n: '*'})
            .groupBy('status', 'stage_id', 'lead_line')
          if (isMysql(this.db)) counted.forShare()
          const rows = (await counted) as Array<{status: string; stage_id: string; lead_line: string; n: number | string}>
          await trx('lead_counts').where('customer_id', id).delete()
          for (let start = 0; start < rows.length; start += 200) {
            await trx('lead_counts').insert(
              rows
                .slice(start, start + 200)
                .map((row) => ({customer_id: id, status: row.status, stage_id: row.stage_id, lead_line: row.lead_line, slot: 0, n: Number(row.n)})),
            )
          }
        },
        isMysql(this.db) ? {isolationLevel: 'repeatable read'} : undefined,
      )
    }
    return customers.length
  }
}
