import type {Knex} from 'knex'

import type {LeadLine} from '../customers/customer-types.js'
import type {CustomersStore} from '../customers/customers-store.js'
import type {Db} from '../db/knex.js'
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
  ) {}

  /**
   * One page in the requested order plus one extra row, so the caller knows whether more follow.
   * Stages and owners are loaded for the page afterwards: joined into the page query, MariaDB
   * starts from the small stages table and sorts every lead of the customer.
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
    // and looks each up in the page.
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

  /**
   * How many leads match the filters, ignoring cursor and offset: from the kept counts when the
   * filters are equality filters only, else counted over the rows an index bounds.
   */
  /** Whether the customer has a lead of this id. */
  async hasLead(customerId: string, id: string): Promise<boolean> {
    return (await this.db('leads').where({customer_id: customerId, id}).first('id')) !== undefined
  }

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
