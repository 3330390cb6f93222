import type {Knex} from 'knex'

import type {LeadLine} from '../customers/customer-types.js'
import {DEFAULT_STATEMENT_TIMEOUT_MS} from '../config/config.js'
import type {CustomersStore} from '../customers/customers-store.js'
import {type Db, isMysql} from '../db/knex.js'
import {readWithin, timeCheck} from '../db/statement-limit.js'
import {runRead} from '../db/statements.js'
import type {CursorPosition, SortDirection, SortField} from './cursor.js'
import type {LeadCountsStore} from './lead-counts-store.js'
import {type LeadOwner, type LeadRow, rowToLeadRecord, stagesById, type LeadWithRelations, withStageAndOwner} from './lead-rows.js'
import {countMatches, matchingIds, narrowestFirst, whereMatches} from './lead-search-store.js'
import {parseSearch, type SearchPlan} from './lead-search-terms.js'
import type {LeadRecord, LeadStatus} from './lead-types.js'

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

/** How list statements are bounded and searches found; tests shrink the window to reach every path with a few leads. */
export interface ListTuning {
  /** The time limit of each list and search statement (LEADS_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number
  /** Leads a search walks in the page's order before driving from its matches instead (WALK_WINDOW). */
  walkWindow?: number
  /** A search whose driving range holds at most this many entries drives at once (DRIVE_AT_MOST). */
  driveAtMost?: number
}

export interface LeadPageRequest {
  sortBy: SortField
  sortDir: SortDirection
  after?: CursorPosition
  offset: number
  limit: number
}

/** The list queries of the API: pages in any order, with filters and search, and their counts. Every query carries a customer_id predicate. */
export class LeadQueryStore {
  constructor(
    private readonly db: Db,
    private readonly counts: LeadCountsStore,
    private readonly customers: CustomersStore,
    options: ListTuning = {},
  ) {
    this.tuning = {
      statementTimeoutMs: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      walkWindow: options.walkWindow ?? WALK_WINDOW,
      driveAtMost: options.driveAtMost ?? DRIVE_AT_MOST,
    }
  }

  private readonly tuning: Required<ListTuning>

  private read<Row>(query: Knex.QueryBuilder): Promise<Row[]> {
    return readWithin<Row>(this.db, query, this.tuning.statementTimeoutMs)
  }

  /**
   * One page in the requested order plus one extra row, so the caller knows whether more follow.
   * Stages and owners are loaded for the page afterwards: joined into the page query, MariaDB
   * starts from the small stages table and sorts every lead of the customer.
   */
  async listPage(customerId: string, filters: LeadFilters, page: LeadPageRequest): Promise<LeadWithRelations[]> {
    return this.withRelations(customerId, (await this.pageRows(customerId, filters, page)).map(rowToLeadRecord))
  }

  /**
   * The rows listPage loads stages and owners for; the scale benchmark's floor. A search whose
   * driving range is wide walks a window of the sort order first (walkedIds), which finds the
   * page of a common word in a few milliseconds; when the window does not hold a whole page (the
   * matches are few, or lie further on), the page is driven from the matches themselves.
   */
  async pageRows(customerId: string, filters: LeadFilters, page: LeadPageRequest): Promise<LeadRow[]> {
    if (filters.search === null) return []
    if (filters.search !== undefined && (await this.worthWalking(customerId, filters.search, page))) {
      const walked = await this.read<LeadRow>(this.pageQuery(customerId, filters, page, 'walk'))
      if (walked.length > page.limit) return walked
    }
    return this.read<LeadRow>(this.pageQuery(customerId, filters, page, 'drive'))
  }

  /**
   * Whether a window of the sort order is expected to hold the page: the driving range is wide,
   * and the pieces' shares of the customer's leads, multiplied (as if independent), leave a
   * page's worth of matches in a window. Otherwise (`grace kalo`: 1 lead in 800) driving is cheaper.
   */
  private async worthWalking(customerId: string, plan: SearchPlan, page: LeadPageRequest): Promise<boolean> {
    const sizes = plan.sizes ?? []
    if (sizes.length === 0 || sizes[0]! <= this.tuning.driveAtMost) return false
    const leads = await this.counts.total(customerId, {})
    const share = sizes.reduce((product, size) => product * Math.min(1, size / Math.max(1, leads)), 1)
    return share * this.tuning.walkWindow >= page.offset + page.limit + 1
  }

  /** The SQL of one page, a search's leads found the given way (see pageRows). */
  pageQuery(customerId: string, filters: LeadFilters, page: LeadPageRequest, way: 'walk' | 'drive'): Knex.QueryBuilder {
    const plan = filters.search ?? undefined
    const ids =
      way === 'walk' && plan ? this.walkedIds(customerId, filters, plan, page) : this.orderedPage(() => this.matching(customerId, filters, plan), page)
    // A deferred join: the page's ids are found in the index that orders them (which holds the id),
    // so an offset skips index entries instead of whole rows, and only the page's rows are read.
    // CROSS JOIN keeps the page first: SQLite's planner otherwise walks every lead of the customer
    // and looks each up in the page.
    const query = this.db.select('leads.*').from(ids.as('page')).crossJoin('leads', 'leads.id', 'page.id').where('leads.customer_id', customerId)
    applyOrder(query, page.sortBy, page.sortDir)
    return query
  }

  /**
   * The leads of the filters, and of the search when there is one: driven from the search's
   * matching ids, each then looked up in `leads` (the matches first, by STRAIGHT_JOIN on MySQL:
   * MariaDB would otherwise walk every lead of the customer and probe the matches).
   */
  private matching(customerId: string, filters: LeadFilters, plan: SearchPlan | undefined): Knex.QueryBuilder {
    let query: Knex.QueryBuilder
    if (plan === undefined) query = timeCheck(this.db, this.db('leads'), 'leads')
    else {
      query = this.db.from(matchingIds(this.db, customerId, plan, filters).as('matched'))
      if (isMysql(this.db)) query.joinRaw('STRAIGHT_JOIN leads ON leads.id = matched.lead_id')
      else query.crossJoin('leads', 'leads.id', 'matched.lead_id')
    }
    this.applyFilters(query, customerId, filters)
    return query
  }

  private orderedPage(matching: () => Knex.QueryBuilder, page: LeadPageRequest): Knex.QueryBuilder {
    return page.sortBy === 'last_interaction_at' ? this.nullsLastIds(matching, page) : orderedIds(matching(), page)
  }

  /**
   * A search page found by walking: the first WALK_WINDOW leads of the filters in the page's order
   * (from the cursor, an index range), each checked for the search, the page taken from those.
   * When it holds a whole page (limit + 1 after the offset), it is the page: no lead beyond the
   * window comes before it. Bounded, so matches that lie far along the order (a two-word search
   * whose leads are all old, with newest first) cost one window, not a walk of every lead.
   */
  private walkedIds(customerId: string, filters: LeadFilters, plan: SearchPlan, page: LeadPageRequest): Knex.QueryBuilder {
    // Emails and phones are checked on the row itself; words by their own index.
    const columns = plan.kind === 'words' && plan.addresses.length === 0 ? [] : ['leads.email_normalized', 'leads.phone_digits', 'leads.phone_last10']
    const window = this.orderedPage(() => this.matching(customerId, filters, undefined).select(columns), {...page, offset: 0, limit: this.tuning.walkWindow})
    const query = this.db.select('walked.id', `walked.${page.sortBy}`).from(window.as('walked'))
    whereMatches(this.db, query, customerId, plan, 'walked')
    applyOrder(query, page.sortBy, page.sortDir, 'walked')
    return query.limit(page.limit + 1).offset(page.offset)
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
      .select('merged.*')
      .from(both.as('merged'))
      .orderByRaw('(merged.last_interaction_at IS NULL) ASC')
      .orderBy('merged.last_interaction_at', page.sortDir)
      .orderBy('merged.id', page.sortDir)
      .limit(page.limit + 1)
      .offset(page.offset)
  }

  /** How a search term is matched for the customer (its pieces narrowest first), or null when it can match nothing. */
  async searchPlan(customerId: string, term: string): Promise<SearchPlan | null> {
    const plan = parseSearch(term)
    return plan === null ? null : narrowestFirst(this.db, customerId, plan)
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
    const ownerIds = leads.flatMap((lead) => (lead.ownerId === null ? [] : [lead.ownerId]))
    const stageIds = leads.map((lead) => lead.stageId)
    const staged = knownStages ? null : this.customers.stageSummariesRead(customerId, stageIds)
    const owned = this.customers.ownersRead(customerId, ownerIds)
    const [stages, owners] = await Promise.all([
      knownStages ? stagesById(knownStages) : staged ? runRead(trx, staged).then(stagesById) : new Map<string, LeadWithRelations['stage']>(),
      owned ? runRead(trx, owned) : new Map<string, LeadOwner>(),
    ])
    return leads.map((lead) => withStageAndOwner(lead, stages, owners))
  }

  /** Whether the customer has a lead of this id. */
  async hasLead(customerId: string, id: string): Promise<boolean> {
    return (await this.db('leads').where({customer_id: customerId, id}).first('id')) !== undefined
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
      // Counted over the search's index ranges, which carry the equality filters; the leads are
      // read only for the time filters.
      const {status, stageId, leadLine} = rest
      const timed = rest.createdSince !== undefined || rest.updatedSince !== undefined
      query = countMatches(this.db, customerId, plan, {status, stageId, leadLine}, timed ? (leads) => this.applyFilters(leads, customerId, filters) : undefined)
    } else {
      query = timeCheck(this.db, this.db('leads').count({total: '*'}), 'leads')
      this.applyFilters(query, customerId, filters)
    }
    const [row] = await this.read<{total: number | string}>(query)
    return Number(row?.total ?? 0)
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

/** The ids of a page in a sort whose index serves it (created_at, updated_at): a keyset range, then the order. */
function orderedIds(query: Knex.QueryBuilder, page: LeadPageRequest): Knex.QueryBuilder {
  query.select('leads.id', `leads.${page.sortBy}`)
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

function applyOrder(query: Knex.QueryBuilder, sortBy: SortField, sortDir: SortDirection, table = 'leads'): void {
  if (sortBy === 'last_interaction_at') query.orderByRaw(`(${table}.last_interaction_at IS NULL) ASC`)
  query.orderBy(`${table}.${sortBy}`, sortDir).orderBy(`${table}.id`, sortDir)
}

/** Leads a window of the sort order holds (walkedIds): walking one costs about a lookup per piece per lead. */
const WALK_WINDOW = 5000
/** A search whose driving range holds at most this many entries is driven from it without walking. */
const DRIVE_AT_MOST = 2000
