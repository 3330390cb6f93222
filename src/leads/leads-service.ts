import pLimit, {type LimitFunction} from 'p-limit'

import {StatementTimeout} from '../db/statement-limit.js'
import {ValidationError} from '../shared/errors.js'
import {type CursorCodec, type CursorPosition, type DecodedPosition, foreignCursor} from './cursor.js'
import type {Lead} from './lead-types.js'
import {toApiLead} from './lead-view.js'
import type {LeadChangeFeed} from './lead-change-feed.js'
import type {LeadQueryStore} from './lead-query-store.js'
import type {LeadWithRelations} from './lead-rows.js'
import type {ListQuery} from './list-query.js'

export interface LeadList {
  leads: Lead[]
  total: number
  limit: number
  offset: number
  next_cursor: string | null
  /** sync=true only: whether more changes are there to fetch right now. */
  has_more?: boolean
}

/**
 * Searches that read at once, per daemon. A search counts every lead it matches, which for a word
 * many leads share takes long enough that a burst of broad searches could hold every pooled
 * database connection while creates and other reads waited for one. Past four, searches wait for
 * each other instead (each reads its page and total at once: at most eight of MySQL's 16).
 */
export const SEARCHES_AT_ONCE = 4

/** Reading a customer's leads: filters, sorts, keyset cursors and offsets. */
export class LeadsService {
  private readonly searches: LimitFunction = pLimit(SEARCHES_AT_ONCE)
  /** Searches being answered, by customer and query: the same search asked again meanwhile shares the answer. */
  private readonly searchesInFlight = new Map<string, Promise<LeadList>>()

  constructor(
    private readonly store: LeadQueryStore,
    private readonly changeFeed: LeadChangeFeed,
    private readonly cursors: CursorCodec,
  ) {}

  async list(customerId: string, query: ListQuery): Promise<LeadList> {
    if (query.sync) return this.changes(customerId, query)
    if (query.search !== undefined) return this.search(customerId, query)
    return this.page(customerId, query)
  }

  /**
   * A search, at most SEARCHES_AT_ONCE at a time; one already being answered for the same customer
   * and query is shared rather than counted again (a sync job's workers often ask the same first
   * page at once, and each broad search counts all its matches).
   */
  private search(customerId: string, query: ListQuery): Promise<LeadList> {
    const key = `${customerId} ${JSON.stringify(query)}`
    const running = this.searchesInFlight.get(key)
    if (running) return running
    const answer = this.searches(() => this.page(customerId, query)).finally(() => this.searchesInFlight.delete(key))
    this.searchesInFlight.set(key, answer)
    return answer
  }

  /** A page of the sorted list, with its filters and search. */
  private async page(customerId: string, query: ListQuery): Promise<LeadList> {
    const after =
      query.cursor === undefined ? undefined : await this.ownPosition(customerId, this.cursors.decode(query.cursor, query.sortBy, query.sortDir, customerId))
    const filters = {
      status: query.status,
      stageId: query.stageId,
      leadLine: query.leadLine,
      createdSince: query.createdSince,
      updatedSince: query.updatedSince,
      search: query.search === undefined ? undefined : await this.store.searchPlan(customerId, query.search),
    }
    const page = {sortBy: query.sortBy, sortDir: query.sortDir, after, offset: query.offset, limit: query.limit}
    // The page and total at once, on two connections (MySQL): neither waits for the other.
    const reading = this.store.listPage(customerId, filters, page).catch((error: unknown) => {
      // An offset page reads every lead before it: past the time limit, the way on is a cursor (a
      // search's own advice comes first, from narrowedOnTimeout).
      throw error instanceof StatementTimeout && page.offset > 0 && query.search === undefined ? deepOffset(error) : error
    })
    const [rows, total] = await narrowedOnTimeout(query, Promise.all([reading, this.store.count(customerId, filters)]))
    const pageRows = rows.slice(0, query.limit)
    const last = pageRows.at(-1)
    return {
      leads: pageRows.map((row) => toApiLead(row, query.includeCustomFields)),
      total,
      limit: query.limit,
      offset: query.offset,
      next_cursor: rows.length > query.limit && last ? this.cursors.encode(positionOf(last, query), customerId) : null,
    }
  }

  /**
   * A page of the change feed: each committed change once, in commit order. The cursor always
   * points after the last change returned (or where the caller was, when nothing changed), so a
   * client keeps the last next_cursor and resumes from it whenever it likes.
   */
  private async changes(customerId: string, query: ListQuery): Promise<LeadList> {
    if (query.cursor !== undefined && query.updatedSince !== undefined) {
      throw new ValidationError('updated_since only starts the change feed; a cursor already carries where it started', 'updated_since')
    }
    const from =
      query.cursor === undefined
        ? {...FEED_START, updatedSince: query.updatedSince ?? null}
        : await this.ownPosition(customerId, this.cursors.decodeChange(query.cursor, customerId))
    const updatedSince = from.updatedSince ?? undefined
    const [rows, total] = await narrowedOnTimeout(
      query,
      Promise.all([this.changeFeed.listChanges(customerId, from, updatedSince, query.limit), this.store.count(customerId, {updatedSince})]),
    )
    const page = rows.slice(0, query.limit)
    const last = page.at(-1)?.position ?? from
    return {
      leads: page.map((row) => toApiLead(row.lead, query.includeCustomFields)),
      total,
      limit: query.limit,
      offset: 0,
      next_cursor: this.cursors.encodeChange({seq: last.seq, id: last.id, updatedSince: from.updatedSince}, customerId),
      has_more: rows.length > query.limit,
    }
  }

  /**
   * The position of a cursor the customer may use. One issued before cursors named their customer
   * is the customer's when the lead it points after is (a position holds the id of the last lead
   * returned; the feed's start points at none). The next cursor it gets names the customer.
   */
  private async ownPosition<P extends {id: string}>(customerId: string, decoded: DecodedPosition<P>): Promise<P> {
    const {unbound, ...position} = decoded
    if (unbound && position.id !== FEED_START.id && !(await this.store.hasLead(customerId, position.id))) throw foreignCursor()
    return position as unknown as P
  }
}

/** Before every sequenced change: numbers start at 1 (0 marks a pending lead, never returned), and no id sorts before the nil UUID. */
const FEED_START = {seq: 0, id: '00000000-0000-0000-0000-000000000000'}

/**
 * The answer, or when a statement ran out of its time limit, a 400 saying how to narrow the
 * request: the list was too broad to answer in time, and asking again the same way would be too.
 */
async function narrowedOnTimeout<T>(query: ListQuery, answer: Promise<T>): Promise<T> {
  try {
    return await answer
  } catch (error) {
    if (!(error instanceof StatementTimeout)) throw error
    const seconds = `${(error.limitMs / 1000).toLocaleString('en-US')} s`
    if (query.search !== undefined) {
      throw new ValidationError(
        `search matches too many leads to answer within ${seconds}: narrow it with a longer or rarer word (a surname, the beginning of an email) or add a filter (status, stageId, lead_line, created_since, updated_since)`,
        'search',
      )
    }
    const range = query.updatedSince !== undefined ? 'updated_since' : query.createdSince !== undefined ? 'created_since' : undefined
    throw new ValidationError(
      `this list takes longer than ${seconds} to answer: narrow it with a later ${range ?? 'updated_since'} or a filter (status, stageId, lead_line)`,
      range,
    )
  }
}

/** The 400 for an offset page that ran out of its time limit: page with cursor instead. */
function deepOffset(error: StatementTimeout): ValidationError {
  const seconds = `${(error.limitMs / 1000).toLocaleString('en-US')} s`
  return new ValidationError(
    `this page takes longer than ${seconds} to answer: an offset page reads every lead before it, so page this deep with cursor (each page's next_cursor costs the same at any depth)`,
    'offset',
  )
}

function positionOf(lead: LeadWithRelations, query: ListQuery): CursorPosition {
  const value = {
    created_at: lead.createdAt,
    updated_at: lead.updatedAt,
    last_interaction_at: lead.lastInteractionAt,
  }[query.sortBy]
  return {sortBy: query.sortBy, sortDir: query.sortDir, value, id: lead.id}
}
