import type {CursorCodec, CursorPosition} from './cursor.js'
import type {Lead} from './lead-types.js'
import {toApiLead} from './lead-view.js'
import type {LeadsStore, LeadWithRelations} from './leads-store.js'
import type {ListQuery} from './list-query.js'

export interface LeadList {
  leads: Lead[]
  total: number
  limit: number
  offset: number
  next_cursor: string | null
}

/** Reading a customer's leads: filters, sorts, keyset cursors and offsets. */
export class LeadsService {
  constructor(
    private readonly store: LeadsStore,
    private readonly cursors: CursorCodec,
  ) {}

  async list(customerId: string, query: ListQuery): Promise<LeadList> {
    const after = query.cursor === undefined ? undefined : this.cursors.decode(query.cursor, query.sortBy, query.sortDir)
    const filters = {
      status: query.status,
      stageId: query.stageId,
      leadLine: query.leadLine,
      createdSince: query.createdSince,
      updatedSince: query.updatedSince,
      search: query.search,
    }
    const page = {sortBy: query.sortBy, sortDir: query.sortDir, after, offset: query.offset, limit: query.limit}
    const [rows, total] = await Promise.all([
      this.store.listPage(customerId, filters, page),
      this.store.count(customerId, filters),
    ])
    const pageRows = rows.slice(0, query.limit)
    const last = pageRows.at(-1)
    return {
      leads: pageRows.map((row) => toApiLead(row, query.includeCustomFields)),
      total,
      limit: query.limit,
      offset: query.offset,
      next_cursor: rows.length > query.limit && last ? this.cursors.encode(positionOf(last, query)) : null,
    }
  }
}

function positionOf(lead: LeadWithRelations, query: ListQuery): CursorPosition {
  const value = {
    created_at: lead.createdAt,
    updated_at: lead.updatedAt,
    last_interaction_at: lead.lastInteractionAt,
  }[query.sortBy]
  return {sortBy: query.sortBy, sortDir: query.sortDir, value, id: lead.id}
}
