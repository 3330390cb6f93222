import {randomUUID} from 'node:crypto'

import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {compile, insertChunks, type Read, type Statement} from '../db/statements.js'

export interface StoredEvent {
  id: string
  customerId: string
  type: string
  leadId: string
  payload: unknown
  createdAt: number
}

/** SQL for the transactional outbox of domain events. */
export class EventsStore {
  constructor(private readonly db: Db) {}

  /** A new event (its id given here), to be inserted with insertStatements in the transaction of its change. */
  event(event: Omit<StoredEvent, 'id'>): StoredEvent {
    return {id: randomUUID(), ...event}
  }

  /** The insert of events, sent in the transaction of their change, so each exists exactly when its change does. */
  insertStatements(events: readonly StoredEvent[]): Statement[] {
    return insertChunks(this.db, 'events', events.map(eventToRow))
  }

  async find(id: string): Promise<StoredEvent | null> {
    const row = (await this.db('events').where({id}).first()) as EventRow | undefined
    return row ? fromRow(row) : null
  }

  /** The events whose ids a subquery selects, by id: a read for a batch. */
  manyRead(ids: Knex.QueryBuilder): Read<Map<string, StoredEvent>> {
    return {
      statement: compile(this.db('events').whereIn('id', ids)),
      read: (result) => new Map((result.rows as unknown as EventRow[]).map((row) => [row.id, fromRow(row)])),
    }
  }

  async listForLead(customerId: string, leadId: string): Promise<StoredEvent[]> {
    const rows = (await this.db('events').where({customer_id: customerId, lead_id: leadId}).orderBy('created_at')) as EventRow[]
    return rows.map(fromRow)
  }
}

interface EventRow {
  id: string
  customer_id: string
  type: string
  lead_id: string
  payload: string
  created_at: number | string
}

function fromRow(row: EventRow): StoredEvent {
  return {
    id: row.id,
    customerId: row.customer_id,
    type: row.type,
    leadId: row.lead_id,
    payload: JSON.parse(row.payload) as unknown,
    createdAt: Number(row.created_at),
  }
}

/** The row an event is stored as (also what the push bench's floor inserts). */
export function eventToRow(event: StoredEvent): {id: string; customer_id: string; type: string; lead_id: string; payload: string; created_at: number} {
  return {
    id: event.id,
    customer_id: event.customerId,
    type: event.type,
    lead_id: event.leadId,
    payload: JSON.stringify(event.payload),
    created_at: event.createdAt,
  }
}
