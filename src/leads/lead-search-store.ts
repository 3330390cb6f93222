import type {Knex} from 'knex'

import {isMysql} from '../db/knex.js'
import {timeCheck} from '../db/statement-limit.js'
import {prefixRange, type SearchPlan} from './lead-search-terms.js'

/**
 * The SQL of search: the queries that answer a SearchPlan (lead-search-terms.ts) from index
 * ranges, so a search costs what it matches rather than what the customer holds, and the word
 * index they read.
 *
 * A lead's words live in `lead_search_words` (customer, word, lead), one row per distinct word,
 * kept in step with the leads by every write path in the lead's own transaction. Each row also
 * carries the lead's equality filters (status, stage_id, lead_line) and all its words (`words`),
 * so a search of several words, with or without those filters, and its count are one range of
 * the first piece's words checked row by row, without a lookup per lead. Emails and phone
 * digits are searched in the leads table's own indexes. The email's domain is not split into
 * words: every lead at a common domain would add rows that cost each write and rarely narrow a
 * search.
 */

/** The filters of a list that each word row carries (the leads table's columns of the same names). */
export interface WordFilters {
  status?: string
  stageId?: string
  leadLine?: string
}

type WordPlan = Extract<SearchPlan, {kind: 'words'}>

function wherePrefix(query: Knex.QueryBuilder, column: string, prefix: string): Knex.QueryBuilder {
  const [from, before] = prefixRange(prefix)
  query.where(column, '>=', from)
  return before === null ? query : query.andWhere(column, '<', before)
}

/**
 * The distinct ids of the customer's leads the plan matches, read from index ranges: the
 * driving side of a search. An address (the narrowest there is) drives from the email index;
 * else the first piece's word range drives (see narrowestFirst), the other pieces and the filters
 * checked on its rows (wordMatches).
 */
export function matchingIds(db: Knex, customerId: string, plan: SearchPlan, filters: WordFilters = {}): Knex.QueryBuilder {
  if (plan.kind === 'phone') {
    const whole = timeCheck(db, wherePrefix(db('leads').select('id as lead_id').where('customer_id', customerId), 'phone_digits', plan.digits), 'leads')
    return whole.union((q) =>
      timeCheck(db, wherePrefix(q.from('leads').select('id as lead_id').where('customer_id', customerId), 'phone_last10', plan.last10), 'leads'),
    )
  }
  if (plan.addresses.length > 0) return addressMatches(db, customerId, plan).select('leads.id as lead_id')
  return wordMatches(db, customerId, plan.pieces, filters).distinct('w.lead_id')
}

/**
 * How many of the customer's leads the plan matches with the filters (`leads`: the filters
 * only the leads table holds, when there are any), from the same index ranges.
 * COUNT(DISTINCT) over the word rows rather than a count over matchingIds: MariaDB would first
 * copy every id into a temporary table, which for a common first name costs many times the
 * count itself.
 */
export function countMatches(
  db: Knex,
  customerId: string,
  plan: SearchPlan,
  filters: WordFilters,
  leads?: (leads: Knex.QueryBuilder) => void,
): Knex.QueryBuilder {
  if (plan.kind === 'phone' || plan.addresses.length > 0) {
    const query = timeCheck(db, db('leads').count({total: '*'}).where('leads.customer_id', customerId), 'leads')
    whereMatches(db, query, customerId, plan)
    whereFilters(query, 'leads', filters)
    leads?.(query)
    return query
  }
  const query = wordMatches(db, customerId, plan.pieces, filters).countDistinct({total: 'w.lead_id'})
  if (leads) {
    // Filters the word rows do not carry are checked on each matching lead (a primary-key lookup each).
    query.join('leads', 'leads.id', 'w.lead_id')
    leads(query)
  }
  return query
}

/** Restricts `table`'s rows (leads, or word rows carrying the same columns) to the filters. */
function whereFilters(query: Knex.QueryBuilder, table: string, filters: WordFilters): void {
  if (filters.status !== undefined) query.where(`${table}.status`, filters.status)
  if (filters.stageId !== undefined) query.where(`${table}.stage_id`, filters.stageId)
  if (filters.leadLine !== undefined) query.where(`${table}.lead_line`, filters.leadLine)
}

/**
 * Orders a plan's pieces narrowest first, so the first drives a search (the others are checked
 * on its rows), and notes how many index entries each piece's range holds (`sizes`; a piece not
 * looked at is Infinity). Pieces are counted longest first (usually the narrowest), stopping at
 * one narrow enough to drive: length alone guesses wrong when a long piece is a common word
 * (`grace kalo`).
 */
export async function narrowestFirst(db: Knex, customerId: string, plan: SearchPlan): Promise<SearchPlan> {
  if (plan.kind === 'phone' || plan.addresses.length > 0) return {...plan, sizes: [await drivingSize(db, customerId, plan)]}
  const byLength = [...plan.pieces].sort((a, b) => b.length - a.length)
  const sizes = new Map<string, number>()
  for (const piece of byLength) {
    const size = await rangeSize(db, wherePrefix(db('lead_search_words').select('lead_id').where('customer_id', customerId), 'word', piece), ESTIMATE_CAP)
    sizes.set(piece, size)
    if (size <= NARROW_ENOUGH) break
  }
  const size = (piece: string) => sizes.get(piece) ?? Number.POSITIVE_INFINITY
  const pieces = byLength.sort((a, b) => size(a) - size(b))
  return {...plan, pieces, sizes: pieces.map(size)}
}

/**
 * How many rows `range` holds: on MySQL the optimizer's estimate (index dives: close for small
 * ranges and the right order of size for large ones, at a fraction of the cost of counting a
 * large range); on SQLite, which keeps no such estimate, counted up to `cap`.
 */
async function rangeSize(db: Knex, range: Knex.QueryBuilder, cap: number): Promise<number> {
  if (isMysql(db)) {
    const {sql, bindings} = range.toSQL().toNative()
    const [plan] = (await db.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[])) as [Array<{rows: number | string | null}>]
    return Number(plan[0]?.rows ?? 0)
  }
  const [row] = (await db.from(range.limit(cap).as('sample')).count({n: '*'})) as Array<{n: number | string}>
  return Number(row!.n)
}

/** How many entries the index ranges a phone or address plan drives from hold, each counted up to the cap. */
async function drivingSize(db: Knex, customerId: string, plan: SearchPlan): Promise<number> {
  const leads = () => db('leads').select('id').where('customer_id', customerId)
  if (plan.kind === 'words') return rangeSize(db, wherePrefix(leads(), 'email_normalized', plan.addresses[0]!), ESTIMATE_CAP)
  const whole = await rangeSize(db, wherePrefix(leads(), 'phone_digits', plan.digits), ESTIMATE_CAP)
  return whole + (await rangeSize(db, wherePrefix(leads(), 'phone_last10', plan.last10), ESTIMATE_CAP))
}

/** Counting a range stops here, so an estimate stays a short walk of the index however common the piece. */
const ESTIMATE_CAP = 50_000
/** A piece matching at most this many words drives without looking further. */
const NARROW_ENOUGH = 1000

/**
 * The word rows of leads having all the pieces and the filters: the first piece's range drives;
 * the filters and the other pieces are checked on each of its rows (a piece begins one of the
 * lead's words when ` piece` occurs in `words`; words hold letters and digits only).
 */
function wordMatches(db: Knex, customerId: string, pieces: readonly string[], filters: WordFilters): Knex.QueryBuilder {
  const [first, ...rest] = pieces
  const rows = timeCheck(db, wherePrefix(db('lead_search_words as w').where('w.customer_id', customerId), 'w.word', first!), 'w', 'lead_id')
  whereFilters(rows, 'w', filters)
  // Binary comparisons on both backends: the words column is utf8mb4_bin on MySQL.
  const contains = isMysql(db) ? 'LOCATE(?, w.words) > 0' : 'instr(w.words, ?) > 0'
  for (const piece of rest) rows.whereRaw(contains, [` ${piece}`])
  return rows
}

/** The leads whose email begins with the first address, checked for the rest of the plan. */
function addressMatches(db: Knex, customerId: string, plan: WordPlan): Knex.QueryBuilder {
  const [first, ...rest] = plan.addresses
  const leads = timeCheck(db, wherePrefix(db('leads').where('leads.customer_id', customerId), 'leads.email_normalized', first!), 'leads')
  whereMatches(db, leads, customerId, {...plan, addresses: rest})
  return leads
}

/**
 * Restricts a query to the plan's matches, checked lead by lead: for walking an ordered index.
 * `table` names the rows checked: `leads`, or a derived table holding their id, emails and phones.
 */
export function whereMatches(db: Knex, query: Knex.QueryBuilder, customerId: string, plan: SearchPlan, table = 'leads'): void {
  if (plan.kind === 'phone') {
    query.where((match) =>
      match.where((q) => wherePrefix(q, `${table}.phone_digits`, plan.digits)).orWhere((q) => wherePrefix(q, `${table}.phone_last10`, plan.last10)),
    )
    return
  }
  for (const address of plan.addresses) wherePrefix(query, `${table}.email_normalized`, address)
  for (const piece of plan.pieces) hasWordStarting(db, query, customerId, `${table}.id`, piece)
}

/**
 * Whether the lead in `leadColumn` has a word starting with `piece`: one lookup in the
 * (lead_id, word) index per lead. On MySQL an IN (…) semi-join, which MariaDB runs as that
 * lookup (FirstMatch) at about half the cost of a correlated subquery. SQLite would build the
 * whole range into a temporary index first, so there it is a scalar subquery with LIMIT,
 * without customer_id (with it SQLite picks the (customer_id, word) key and scans the piece's
 * whole range for every lead).
 */
function hasWordStarting(db: Knex, query: Knex.QueryBuilder, customerId: string, leadColumn: string, piece: string): void {
  if (isMysql(db)) {
    query.whereIn(leadColumn, wherePrefix(db('lead_search_words as p').select('p.lead_id').where('p.customer_id', customerId), 'p.word', piece))
    return
  }
  const [from, before] = prefixRange(piece)
  const below = before === null ? '' : ' AND p.word < ?'
  query.whereRaw(
    `(SELECT 1 FROM lead_search_words p WHERE p.lead_id = ${leadColumn} AND p.word >= ?${below} LIMIT 1) IS NOT NULL`,
    before === null ? [from] : [from, before],
  )
}
