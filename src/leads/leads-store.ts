import type {Knex} from 'knex'

import type {LeadLine} from '../customers/customer-types.js'
import {type Db, isMysql} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {compile, insertChunks, type Read, runEach, runRead, type Statement} from '../db/statements.js'
import {type LeadWrite, LeadCountsStore} from './lead-counts.js'
import {countMatches, LeadSearchIndex, matchingIds, narrowestFirst, parseSearch, type SearchPlan, whereMatches} from './lead-search.js'
import type {CursorPosition, SortDirection, SortField} from './cursor.js'
import type {CustomFields, LeadRecord, LeadStatus, SourcePlatform, SourceType} from './lead-types.js'
import {normalizeEmail, phoneDigits, phoneLast10} from './lead-matching.js'

/** Filters of a list, all scoped to one customer. */
export interface LeadFilters {
  status?: LeadStatus
  stageId?: string
  leadLine?: LeadLine
  createdSince?: number
  updatedSince?: number
  /** From searchPlan: how the term is matched, or null when it can match nothing. */
  search?: SearchPlan | null
}

export interface LeadPageRequest {
  sortBy: SortField
  sortDir: SortDirection
  after?: CursorPosition
  offset: number
  limit: number
}

/** A position in a customer's change feed: the last change seen (its number, then its id). */
export interface ChangePosition {
  seq: number
  id: string
}

/** A lead as the change feed returns it, with its position. */
export interface LeadChange {
  lead: LeadWithRelations
  position: ChangePosition
}

/** A stored lead with its stage and owner, as the list query returns it. */
export interface LeadWithRelations extends LeadRecord {
  stage: {id: string; slug: string; name: string; color: string}
  owner: {id: string; name: string; role_name: string} | null
}

/** Leads numbered per UPDATE … CASE statement of the change feed. */
const NUMBERING_CHUNK = 250

/** change_seq of a lead written but not yet numbered into the change feed. */
const PENDING = 0

/** Pending changes numbered per transaction: more than a page (100), few enough to hold their row locks briefly. */
const SEQUENCE_BATCH = 1000

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

/** SQL for leads. Every query here carries a customer_id predicate. */
/**
 * The two match lookups, each by its own index. A bulk's 500 values are past
 * eq_range_index_dive_limit (200), where MariaDB estimates from index statistics; for a growing
 * customer it then read every lead of the customer (115,000 rows, 130 ms) instead of 500 lookups
 * (1.5 ms). So on MySQL the index is named (FORCE INDEX) and the plan cannot drift.
 */
const MATCH_LOOKUPS = [
  {column: 'email_normalized', index: 'leads_customer_id_email_normalized_index', keysOf: (keys: {emails: readonly string[]}) => keys.emails},
  {column: 'phone_last10', index: 'leads_customer_id_phone_last10_index', keysOf: (keys: {phones: readonly string[]}) => keys.phones},
] as const

export class LeadsStore {
  private readonly counts: LeadCountsStore
  private readonly searchIndex: LeadSearchIndex

  constructor(private readonly db: Db) {
    this.counts = new LeadCountsStore(db)
    this.searchIndex = new LeadSearchIndex(db)
  }

  /**
   * One page in the requested order plus one extra row, so the caller knows whether more follow.
   * Stages and owners are loaded for the page afterwards: joined into the page query, MariaDB
   * starts from the small stages table and sorts every lead of the customer (20 ms against
   * under 1 ms at 10,000 leads).
   */
  async listPage(customerId: string, filters: LeadFilters, page: LeadPageRequest, searchMatches?: number): Promise<LeadWithRelations[]> {
    const {query} = await this.pageQuery(customerId, filters, page, searchMatches)
    return this.withRelations(customerId, ((await query) as LeadRow[]).map(rowToLeadRecord))
  }

  /**
   * The SQL of one page (what listPage runs before loading stages and owners); the scale
   * benchmark's floor. Wrapped, because a query builder is a thenable an async function would run.
   */
  async pageQuery(customerId: string, filters: LeadFilters, page: LeadPageRequest, searchMatches?: number): Promise<{query: Knex.QueryBuilder}> {
    const plan = filters.search
    const way = plan && searchMatches !== undefined ? await this.searchWay(customerId, searchMatches, page) : 'drive'
    const matching = () => {
      const query = this.db('leads')
      this.applyFilters(query, customerId, filters)
      if (plan !== undefined) this.applySearch(query, customerId, plan, way)
      return query
    }
    const ids = page.sortBy === 'last_interaction_at' ? this.nullsLastIds(matching, page) : orderedIds(matching(), page)
    // A deferred join: the page's ids are found in the index that orders them (which holds the id),
    // so an offset skips index entries instead of whole rows, and only the page's rows are read.
    // CROSS JOIN keeps the page first: SQLite's planner otherwise walks every lead of the customer
    // and looks each up in the page (60 ms at 100,000 leads against 1 ms).
    const query = this.db.select('leads.*').from(ids.as('page')).crossJoin('leads', 'leads.id', 'page.id').where('leads.customer_id', customerId)
    applyOrder(query, page.sortBy, page.sortDir)
    return {query}
  }

  /**
   * The page's ids in last_interaction_at order, nulls last in both directions. One ORDER BY
   * that puts nulls last is an expression no index serves (a sort of every lead), so the leads
   * with a value and those without are read as two index ranges, each at most as deep as the
   * page, and merged.
   */
  private nullsLastIds(matching: () => Knex.QueryBuilder, page: LeadPageRequest): Knex.QueryBuilder {
    const column = 'leads.last_interaction_at'
    const depth = page.offset + page.limit + 1
    const beyond = page.sortDir === 'asc' ? '>' : '<'
    const withoutValue = matching().select('leads.id', column).whereNull(column).orderBy('leads.id', page.sortDir)
    if (page.after?.value === null) {
      // The cursor is already among the leads without a value.
      return withoutValue
        .where('leads.id', beyond, page.after.id)
        .limit(page.limit + 1)
        .offset(page.offset)
    }
    const withValue = matching().select('leads.id', column).whereNotNull(column)
    if (page.after) applyKeyset(withValue, page.after)
    withValue.orderBy(column, page.sortDir).orderBy('leads.id', page.sortDir).limit(depth)
    withoutValue.limit(depth)
    // SQLite refuses ORDER BY/LIMIT on a member of a compound SELECT; as derived tables both accept them.
    const both = this.db
      .select('*')
      .from(withValue.as('with_value'))
      .unionAll((q) => q.select('*').from(withoutValue.as('without_value')))
    return this.db
      .select('merged.id')
      .from(both.as('merged'))
      .orderByRaw('(merged.last_interaction_at IS NULL) ASC')
      .orderBy('merged.last_interaction_at', page.sortDir)
      .orderBy('merged.id', page.sortDir)
      .limit(page.limit + 1)
      .offset(page.offset)
  }

  /**
   * How a search page finds its leads. `walk`: along the index of the sort order, checking each
   * lead, which finds a page quickly when the matches are many; `drive`: from the matching ids
   * (index ranges), sorted afterwards, which is quick when they are few. Walking reads about
   * (depth × leads / matches) leads, driving reads the matches: the cheaper one is taken.
   */
  private async searchWay(customerId: string, matches: number, page: LeadPageRequest): Promise<'walk' | 'drive'> {
    if (matches === 0) return 'drive'
    const leads = await this.counts.total(customerId, {})
    return ((page.offset + page.limit + 1) * leads) / matches < matches ? 'walk' : 'drive'
  }

  /** How a search term is matched for the customer (its pieces narrowest first), or null when it can match nothing. */
  async searchPlan(customerId: string, term: string): Promise<SearchPlan | null> {
    const plan = parseSearch(term)
    return plan === null ? null : narrowestFirst(this.db, customerId, plan)
  }

  /** Restricts a query over `leads` to the search's matches, found the given way (see searchWay). */
  private applySearch(query: Knex.QueryBuilder, customerId: string, plan: SearchPlan | null, way: 'walk' | 'drive'): void {
    if (plan === null) {
      query.whereRaw('1 = 0')
      return
    }
    if (way === 'drive') query.join(matchingIds(this.db, customerId, plan).as('matched'), 'matched.lead_id', 'leads.id')
    else whereMatches(query, plan)
  }

  /**
   * Adds each lead's stage and owner, loaded by id for all the leads at once; `knownStages` (the
   * customer's stages, when the caller has them) spares the stage query.
   */
  async withRelations(
    customerId: string,
    leads: LeadRecord[],
    trx: Knex | Knex.Transaction = this.db,
    knownStages?: ReadonlyArray<LeadWithRelations['stage']>,
  ): Promise<LeadWithRelations[]> {
    const ownersRead = this.ownersRead(
      customerId,
      leads.flatMap((lead) => (lead.ownerId === null ? [] : [lead.ownerId])),
    )
    const [stages, owners] = await Promise.all([
      knownStages
        ? stagesById(knownStages)
        : this.readStages(
            trx,
            customerId,
            leads.map((lead) => lead.stageId),
          ),
      ownersRead ? runRead(trx, ownersRead) : new Map<string, LeadOwner>(),
    ])
    return leads.map((lead) => withStageAndOwner(lead, stages, owners))
  }

  /**
   * The customer's owners with these ids, by id: a read to send in a write's transaction (the
   * owners of the leads it may merge into). Null when there are none to read.
   */
  ownersRead(customerId: string, ids: readonly string[]): Read<Map<string, LeadOwner>> | null {
    if (ids.length === 0) return null
    const query = this.db('owners')
      .where('customer_id', customerId)
      .whereIn('id', [...new Set(ids)])
      .select('id', 'name', 'role_name')
    return {
      statement: compile(query),
      read: (result) =>
        new Map(result.rows.map((row) => [String(row['id']), {id: String(row['id']), name: String(row['name']), role_name: String(row['role_name'])}])),
    }
  }

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
   * Probes (see guardStatement, MySQL) that find a row when any of the customer's leads has one of
   * these emails or phones. Written out: they go with every guessed create, and knex's builder
   * costs more than the statements.
   */
  matchProbes(customerId: string, keys: {emails: readonly string[]; phones: readonly string[]}): Statement[] {
    return MATCH_LOOKUPS.filter(({keysOf}) => keysOf(keys).length > 0).map(({column, index, keysOf}) => {
      const values = keysOf(keys)
      return {
        sql: `SELECT 1 FROM \`leads\` FORCE INDEX (\`${index}\`) WHERE \`customer_id\` = ? AND \`${column}\` IN (${values.map(() => '?').join(', ')})`,
        bindings: [customerId, ...values],
      }
    })
  }

  /**
   * One lookup per index (an OR across two indexes may scan all of the customer's leads), sent
   * as one UNION ALL (no temporary table to drop duplicates; a lead found twice is dropped by
   * the reader).
   */
  private matchLookups(customerId: string, keys: {emails: readonly string[]; phones: readonly string[]}, lock: boolean): Statement[] {
    return MATCH_LOOKUPS.filter(({keysOf}) => keysOf(keys).length > 0).map(({column, index, keysOf}) => {
      const from = isMysql(this.db) ? this.db.raw('?? FORCE INDEX (??)', ['leads', index]) : 'leads'
      const query = this.db
        .select('*')
        .from(from)
        .where('customer_id', customerId)
        .whereIn(column, [...keysOf(keys)])
      if (lock && isMysql(this.db)) query.forUpdate()
      return compile(query)
    })
  }

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
    const leads = await this.withRelations(customerId, rows.map(rowToLeadRecord))
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

  /**
   * How many leads match the filters, ignoring cursor and offset: from the kept counts when the
   * filters are equality filters only, else counted over the rows an index bounds.
   */
  async count(customerId: string, filters: LeadFilters): Promise<number> {
    const {search: plan, ...rest} = filters
    if (plan === undefined && filters.createdSince === undefined && filters.updatedSince === undefined) return this.counts.total(customerId, filters)
    if (plan === null) return 0
    let query: Knex.QueryBuilder
    if (plan) {
      // Counted over the search's index ranges; without other filters the leads are not read at all.
      const filtered = Object.values(rest).some((value) => value !== undefined)
      query = countMatches(this.db, customerId, plan, filtered ? (leads) => this.applyFilters(leads, customerId, filters) : undefined)
    } else {
      query = this.db('leads').count({total: '*'})
      this.applyFilters(query, customerId, filters)
    }
    const [row] = (await query) as Array<{total: number | string}>
    return Number(row?.total ?? 0)
  }

  /** Inserts leads with their counts and search words, in one transaction (test seeding and benchmarks). */
  async insertMany(leads: LeadRecord[]): Promise<void> {
    await this.db.transaction((trx) => runEach(trx, this.insertStatements(leads)))
  }

  private async readStages(trx: Knex | Knex.Transaction, customerId: string, ids: string[]): Promise<Map<string, LeadWithRelations['stage']>> {
    if (ids.length === 0) return new Map()
    const rows = (await trx('stages')
      .where('customer_id', customerId)
      .whereIn('id', [...new Set(ids)])
      .select('id', 'slug', 'name', 'color')) as Array<LeadWithRelations['stage']>
    return stagesById(rows)
  }

  private applyFilters(query: Knex.QueryBuilder, customerId: string, filters: LeadFilters): void {
    query.where('leads.customer_id', customerId)
    if (filters.status !== undefined) query.where('leads.status', filters.status)
    if (filters.stageId !== undefined) query.where('leads.stage_id', filters.stageId)
    if (filters.leadLine !== undefined) query.where('leads.lead_line', filters.leadLine)
    if (filters.createdSince !== undefined) query.where('leads.created_at', '>=', filters.createdSince)
    if (filters.updatedSince !== undefined) query.where('leads.updated_at', '>=', filters.updatedSince)
  }
}

/** A lead's owner as the API shows it. */
export type LeadOwner = NonNullable<LeadWithRelations['owner']>

/** The stages by id, each with only what a lead shows of it. */
export function stagesById(stages: ReadonlyArray<LeadWithRelations['stage']>): Map<string, LeadWithRelations['stage']> {
  return new Map(stages.map((stage) => [stage.id, {id: stage.id, slug: stage.slug, name: stage.name, color: stage.color}]))
}

/** The lead with its stage and owner, from those already loaded. */
export function withStageAndOwner(
  lead: LeadRecord,
  stages: ReadonlyMap<string, LeadWithRelations['stage']>,
  owners: ReadonlyMap<string, LeadOwner>,
): LeadWithRelations {
  return {...lead, stage: stages.get(lead.stageId) as LeadWithRelations['stage'], owner: lead.ownerId === null ? null : (owners.get(lead.ownerId) ?? null)}
}

/** The ids of a page in a sort whose index serves it (created_at, updated_at): a keyset range, then the order. */
function orderedIds(query: Knex.QueryBuilder, page: LeadPageRequest): Knex.QueryBuilder {
  query.select('leads.id')
  if (page.after) applyKeyset(query, page.after)
  applyOrder(query, page.sortBy, page.sortDir)
  return query.limit(page.limit + 1).offset(page.offset)
}

/** Rows after a cursor that holds a value (a cursor among leads without one is nullsLastIds's). */
function applyKeyset(query: Knex.QueryBuilder, after: CursorPosition): void {
  const column = `leads.${after.sortBy}`
  const beyond = after.sortDir === 'asc' ? '>' : '<'
  const value = after.value!
  // The bound first, so both planners see an index range (SQLite does not find one in the OR alone).
  query.where(column, `${beyond}=`, value)
  query.where((next) => next.where(column, beyond, value).orWhere((tie) => tie.where(column, value).where('leads.id', beyond, after.id)))
}

function applyOrder(query: Knex.QueryBuilder, sortBy: SortField, sortDir: SortDirection): void {
  if (sortBy === 'last_interaction_at') query.orderByRaw('(leads.last_interaction_at IS NULL) ASC')
  query.orderBy(`leads.${sortBy}`, sortDir).orderBy('leads.id', sortDir)
}

interface LeadRow {
  id: string
  customer_id: string
  source_platform: string
  source_type: string
  status: string
  created_at: number | string
  updated_at: number | string
  contact_name: string | null
  contact_phone: string | null
  contact_email: string | null
  email_normalized: string | null
  phone_digits: string | null
  phone_last10: string | null
  score: number | null
  qualified: number | boolean | null
  stage_id: string
  owner_id: string | null
  last_interaction_at: number | string | null
  interaction_count: number
  lead_line: string | null
  custom_fields: string
  change_seq: number | string
}

/** The row a lead is stored as (also what the push bench's floor inserts). */
export function leadToRow(lead: LeadRecord): LeadRow {
  return {
    id: lead.id,
    customer_id: lead.customerId,
    source_platform: lead.sourcePlatform,
    source_type: lead.sourceType,
    status: lead.status,
    created_at: lead.createdAt,
    updated_at: lead.updatedAt,
    contact_name: lead.contactName,
    contact_phone: lead.contactPhone,
    contact_email: lead.contactEmail,
    email_normalized: normalizeEmail(lead.contactEmail),
    phone_digits: phoneDigits(lead.contactPhone),
    phone_last10: phoneLast10(lead.contactPhone),
    score: lead.score,
    qualified: lead.qualified,
    stage_id: lead.stageId,
    owner_id: lead.ownerId,
    last_interaction_at: lead.lastInteractionAt,
    interaction_count: lead.interactionCount,
    lead_line: lead.leadLine,
    custom_fields: JSON.stringify(lead.customFields),
    // Every write puts the lead back in the change feed's pending set (see sequencePending).
    change_seq: PENDING,
  }
}

function rowToLeadRecord(row: LeadRow): LeadRecord {
  return {
    id: row.id,
    customerId: row.customer_id,
    sourcePlatform: row.source_platform as SourcePlatform,
    sourceType: row.source_type as SourceType,
    status: row.status as LeadStatus,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    contactName: row.contact_name,
    contactPhone: row.contact_phone,
    contactEmail: row.contact_email,
    score: row.score === null ? null : Number(row.score),
    qualified: row.qualified === null ? null : Boolean(row.qualified),
    stageId: row.stage_id,
    ownerId: row.owner_id,
    lastInteractionAt: row.last_interaction_at === null ? null : Number(row.last_interaction_at),
    interactionCount: Number(row.interaction_count),
    leadLine: row.lead_line as LeadLine | null,
    customFields: JSON.parse(row.custom_fields) as CustomFields,
  }
}
