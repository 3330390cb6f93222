/**
 * The requests benches time: a bulk of 500 new people, each unique in the run, sent with its own
 * Idempotency-Key, or a single create of one new person without a key (as the floor stores none).
 */
import {randomUUID} from 'node:crypto'

import type {LoadConnection} from './http-load.js'

/** Bulk requests of 500 people no request of the run has sent before. */
export class NewPeopleBulks {
  private readonly run = randomUUID().slice(0, 8)
  private batch = 0

  constructor(private readonly headers: Record<string, string>) {}

  /** Sends the next request through `connection`; its time in ms. Any answer but 200 fails the bench. */
  async send(connection: LoadConnection): Promise<number> {
    const batch = this.batch++
    const leads = Array.from({length: 500}, (_, i) => ({
      contact_name: `Bulk ${this.run} ${batch}-${i}`,
      contact_email: `bulk-${this.run}-${batch}-${i}@example.org`,
      contact_phone: `+1 (${String(200 + (batch % 700)).padStart(3, '0')}) 555-${String(i).padStart(4, '0')}`,
    }))
    const started = performance.now()
    const response = await connection.post('/api/agents/crm/leads/bulk', {...this.headers, 'idempotency-key': randomUUID()}, JSON.stringify({leads}))
    if (response.status !== 200) throw new Error(`expected 200, got ${response.status}: ${response.text.slice(0, 300)}`)
    return performance.now() - started
  }
}

/** Single creates of people no request of the run has sent before, without an Idempotency-Key. */
export class NewPeopleCreates {
  private readonly run = randomUUID().slice(0, 8)
  private sent = 0

  constructor(private readonly headers: Record<string, string>) {}

  /** Sends the next create through `connection`; its time in ms. Any answer but 201 fails the bench. */
  async send(connection: LoadConnection): Promise<number> {
    const n = this.sent++
    const lead = {contact_name: `Single ${this.run} ${n}`, contact_email: `single-${this.run}-${n}@example.org`}
    const started = performance.now()
    const response = await connection.post('/api/agents/crm/leads', this.headers, JSON.stringify(lead))
    if (response.status !== 201) throw new Error(`expected 201, got ${response.status}: ${response.text.slice(0, 300)}`)
    return performance.now() - started
  }
}
