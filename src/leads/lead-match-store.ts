import {type Db, isMysql} from '../db/knex.js'
import {compile, insertChunks, type Read, registration, type Statement} from '../db/statements.js'
import {type LeadRow, rowToLeadRecord} from './lead-rows.js'
import type {LeadRecord} from './lead-types.js'

/**
 * The two match lookups, each by its own index. A bulk's 500 values are past
 * eq_range_index_dive_limit (200), where MariaDB estimates from index statistics; for a growing
 * customer it then read every lead of the customer instead of 500 lookups. So on MySQL the index is named (FORCE INDEX) and the plan cannot drift.
 */
const MATCH_LOOKUPS = [
  {column: 'email_normalized', index: 'leads_customer_id_email_normalized_index', keysOf: (keys: {emails: readonly string[]}) => keys.emails},
  {column: 'phone_last10', index: 'leads_customer_id_phone_last10_index', keysOf: (keys: {phones: readonly string[]}) => keys.phones},
] as const

/** The statements a write uses to find the customer's leads its inputs match, and to lock their match keys. */
export class LeadMatchStore {
  constructor(private readonly db: Db) {}

  /**
   * Statements that take exclusive row locks on the customer's match keys (see migration 2) until
   * the transaction ends. Keys must come sorted, so two writers lock in the same order.
   */
  matchKeyLocks(customerId: string, keys: readonly string[]): Statement[] {
    const rows = keys.map((matchKey) => ({customer_id: customerId, match_key: matchKey}))
    return insertChunks(this.db, 'lead_match_locks', rows, {keys: ['customer_id', 'match_key'], update: ['match_key']})
  }

  /**
   * The customer's leads whose normalised email or last-10 phone digits is among those given,
   * oldest first. With `lock` (inside a write) MySQL reads them FOR UPDATE: the latest committed
   * version, held until the transaction ends, so a concurrent merge cannot be lost.
   */
  matchRead(customerId: string, keys: {emails: readonly string[]; phones: readonly string[]}, lock: boolean): Read<LeadRecord[]> | null {
    const parts = this.matchLookups(customerId, keys, lock)
    if (parts.length === 0) return null
    // MySQL needs each locking member in parentheses; SQLite refuses parentheses there (and has no locks).
    const sql = parts.map((part) => (isMysql(this.db) ? `(${part.sql})` : part.sql)).join(' UNION ALL ')
    return {
      statement: {sql, bindings: parts.flatMap((part) => [...part.bindings])},
      read: (result) => {
        const byId = new Map((result.rows as unknown as LeadRow[]).map((row) => [row.id, rowToLeadRecord(row)]))
        return [...byId.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
      },
    }
  }

  /**
   * For a write that assumes these keys are new (sorted, as for matchKeyLocks): registrations
   * (see registration) of the keys, each refused when its row exists. Every write that stores a
   * lead's email or phone has locked its key first, which left the key's row, so a key without a
   * row is one no lead of the customer has; a row whose key no lead has any more only costs the
   * write its guess. A change to how keys are read from leads must register the stored leads'
   * new keys, as migration 20261129000000 does.
   */
  newMatchKeys(customerId: string, keys: readonly string[]): Statement[] {
    const rows = keys.map((matchKey) => ({customer_id: customerId, match_key: matchKey}))
    return insertChunks(this.db, 'lead_match_locks', rows).map(registration)
  }

  /**
   * One lookup per index (an OR across two indexes may scan all of the customer's leads), sent
   * as one UNION ALL (no temporary table to drop duplicates; a lead found twice is dropped by
   * the reader).
   */
  private matchLookups(customerId: string, keys: {emails: readonly string[]; phones: readonly string[]}, lock: boolean): Statement[] {
    return MATCH_LOOKUPS.filter(({keysOf}) => keysOf(keys).length > 0).map(({column, index, keysOf}) => {
      const from = this.db.raw(`??${this.forced(index)}`, ['leads'])
      const query = this.db
        .select('*')
        .from(from)
        .where('customer_id', customerId)
        .whereIn(column, [...keysOf(keys)])
      if (lock && isMysql(this.db)) query.forUpdate()
      return compile(query)
    })
  }

  /** The index a lookup must use, named on MySQL (see MATCH_LOOKUPS); SQLite picks it by itself. */
  private forced(index: string): string {
    return isMysql(this.db) ? ` FORCE INDEX (\`${index}\`)` : ''
  }
}
