import {randomUUID} from 'node:crypto'

import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {compile, type Read, type Statement} from '../db/statements.js'

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

  /** An event and its insert, sent in the transaction of the change, so it exists exactly when the change does. */
  insert(event: Omit<StoredEvent, 'id'>): {event: StoredEvent; statement: Statement} {
    const stored = {id: randomUUID(), ...event}
    const statement = compile(this.db('events').insert({
      id: stored.id,
      customer_id: stored.customerId,
      type: stored.type,
      lead_id: stored.leadId,
      payload: JSON.stringify(stored.payload),
      created_at: stored.createdAt,
    }))
    return {event: stored, statement}
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
