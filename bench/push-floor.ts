/**
 * The floor under a single create: the same transaction shape straight through mysql2 (begin, a
 * lead insert, an event insert, commit) at the benchmark's concurrency, on the same database,
 * into tables that are dropped afterwards. What a create cannot beat.
 *
 * The floor's tables are copies of the service's own `leads` and `events` (CREATE TABLE ... LIKE:
 * every column and index, no foreign keys), and its rows are the ones a create writes (built by
 * the service's own code before the clock starts). The earlier floor, two small scratch tables (5
 * and 4 columns, one secondary index against the leads table's twelve), measured the database's
 * cost of a smaller insert than any create makes; the push bench still measures that one too,
 * beside it, so the two can be compared (docs/performance.md).
 */
import {randomUUID} from 'node:crypto'

import mysql from 'mysql2/promise'

import {CustomersStore} from '../src/customers/customers-store.js'
import {createDb} from '../src/db/knex.js'
import type {Statement} from '../src/db/statements.js'
import {eventToRow} from '../src/events/events-store.js'
import {LEAD_CREATED, leadCreatedSnapshot} from '../src/events/lead-created.js'
import {customerSetup, parseLeadInput} from '../src/leads/lead-input.js'
import {matchCandidates} from '../src/leads/lead-matching.js'
import {newLead} from '../src/leads/lead-merge.js'
import {LeadCountsStore} from '../src/leads/lead-counts-store.js'
import {LeadMatchStore} from '../src/leads/lead-match-store.js'
import {leadToRow} from '../src/leads/lead-rows.js'
import {LeadSearchIndex} from '../src/leads/lead-search-index.js'
import {LeadWriteStatements} from '../src/leads/lead-write-statements.js'
import {type CpuShares, databasePid, meterCpu} from './process-cpu.js'

export interface Percentiles {
  median: number
  p99: number
}

export interface FloorFigures {
  single: Percentiles
  concurrentPerSecond: number
  /** CPU time of this process (the client) and the database server over the timed concurrent transactions. */
  concurrentCpu: CpuShares
}

export const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
export const p99 = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.99))]!
const percentiles = (values: readonly number[]): Percentiles => ({median: median(values), p99: p99(values)})

/** Where the floor's two inserts go: copies of the service's own tables, or the small scratch tables of the earlier floor. */
export type FloorTables = 'service' | 'scratch'

/** The two inserts of one floor transaction, built before the clock starts. */
export type FloorTransaction = [lead: Statement, event: Statement]

/**
 * The floor's tables on one pool: copies of the service's tables (or the scratch tables), and
 * transactions into them, each built before it is timed. `close` drops the tables.
 */
export interface FloorSession {
  /** Builds the `i`th transaction's rows (before any clock starts). */
  build(i: number): FloorTransaction
  /** Runs one transaction (begin, the two inserts, commit) on a pooled connection. */
  run(transaction: FloorTransaction): Promise<void>
  close(): Promise<void>
}

export async function openFloor(url: string, tables: FloorTables, connections: number): Promise<FloorSession> {
  const pool = mysql.createPool({uri: url, connectionLimit: connections})
  await pool.query('DROP TABLE IF EXISTS bench_floor_leads, bench_floor_events')
  if (tables === 'service') {
    await pool.query('CREATE TABLE bench_floor_leads LIKE leads')
    await pool.query('CREATE TABLE bench_floor_events LIKE events')
  } else {
    await pool.query(
      'CREATE TABLE bench_floor_leads (id VARCHAR(36) PRIMARY KEY, customer_id VARCHAR(36) NOT NULL, contact_name VARCHAR(200), contact_email VARCHAR(254), created_at BIGINT NOT NULL, KEY (customer_id, created_at)) ENGINE=InnoDB',
    )
    await pool.query(
      'CREATE TABLE bench_floor_events (id VARCHAR(36) PRIMARY KEY, lead_id VARCHAR(36) NOT NULL, payload TEXT NOT NULL, created_at BIGINT NOT NULL) ENGINE=InnoDB',
    )
  }
  return {
    build: tables === 'service' ? serviceTransaction(randomUUID(), randomUUID()) : scratchTransaction(randomUUID()),
    run: async ([lead, event]) => {
      const connection = await pool.getConnection()
      try {
        await connection.beginTransaction()
        await connection.query(lead.sql, [...lead.bindings])
        await connection.query(event.sql, [...event.bindings])
        await connection.commit()
      } finally {
        connection.release()
      }
    },
    close: async () => {
      await pool.query('DROP TABLE IF EXISTS bench_floor_leads, bench_floor_events')
      await pool.end()
    },
  }
}

/**
 * `sequential` transactions one at a time, then `concurrent` at `concurrency` in flight, timed;
 * `warmup` more at `concurrency` go untimed before the timed concurrent ones, as the API's do.
 */
export async function measureFloor(
  url: string,
  tables: FloorTables,
  sequential: number,
  concurrent: number,
  concurrency: number,
  warmup = 0,
): Promise<FloorFigures> {
  const floor = await openFloor(url, tables, concurrency)
  try {
    const transactions = Array.from({length: sequential + warmup + concurrent}, (_, i) => floor.build(i))
    const single: number[] = []
    for (let i = 0; i < sequential; i++) {
      const started = performance.now()
      await floor.run(transactions[i]!)
      single.push(performance.now() - started)
    }
    let next = 0
    const atConcurrency = async (count: number) =>
      Promise.all(
        Array.from({length: concurrency}, async () => {
          while (next < count) await floor.run(transactions[sequential + next++]!)
        }),
      )
    await atConcurrency(warmup)
    const cpu = meterCpu({client: process.pid, database: databasePid()})
    const started = performance.now()
    await atConcurrency(warmup + concurrent)
    const seconds = (performance.now() - started) / 1000
    return {single: percentiles(single), concurrentPerSecond: concurrent / seconds, concurrentCpu: cpu.stop()}
  } finally {
    await floor.close()
  }
}

/** A single create's two rows, as the service writes them: the lead (every column) and its lead.created event. */
function serviceTransaction(customerId: string, stageId: string): (i: number) => FloorTransaction {
  const stage = {id: stageId, customerId, slug: 'new', name: 'New', color: '#888888', position: 0}
  const setup = customerSetup([stage], [])
  return (i) => {
    const input = parseLeadInput(
      {contact_name: `Floor ${i}`, contact_email: `floor-${i}@example.org`, contact_phone: `+1 555-7${String(i).padStart(5, '0')}`},
      setup,
    )
    const lead = newLead(customerId, input, {stageId, sourceType: 'manual'}, Date.now())
    const snapshot = leadCreatedSnapshot({...lead, stage, owner: null})
    const event = {id: randomUUID(), customerId, type: LEAD_CREATED, leadId: lead.id, payload: snapshot, createdAt: lead.createdAt}
    return [insertOne('bench_floor_leads', leadToRow(lead)), insertOne('bench_floor_events', eventToRow(event))]
  }
}

/** The scratch tables' two rows (the earlier floor). */
function scratchTransaction(customerId: string): (i: number) => FloorTransaction {
  return (i) => {
    const leadId = randomUUID()
    return [
      insertOne('bench_floor_leads', {
        id: leadId,
        customer_id: customerId,
        contact_name: `Floor ${i}`,
        contact_email: `floor-${i}@example.org`,
        created_at: Date.now(),
      }),
      insertOne('bench_floor_events', {
        id: randomUUID(),
        lead_id: leadId,
        payload: JSON.stringify({lead_id: leadId, contact_name: `Floor ${i}`}),
        created_at: Date.now(),
      }),
    ]
  }
}

function insertOne(table: string, row: object): Statement {
  const columns = Object.keys(row)
  return {
    sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
    bindings: Object.values(row) as Statement['bindings'],
  }
}

/**
 * The floor under a bulk request of new leads: the very statements the daemon sends for it (the
 * match-key locks and lookup, then the leads, their counts and search words, with the COMMIT),
 * built by the daemon's own stores before the clock starts and sent straight through mysql2 in
 * the same two round trips. What is left is what the database itself needs for the request.
 * `run` times one request of the given raw rows; `close` ends the session's connections.
 */
export async function openBulkFloor(url: string, customerId: string): Promise<{run(rows: unknown[]): Promise<number>; close(): Promise<void>}> {
  const db = createDb({client: 'mysql', url})
  const pool = mysql.createPool({uri: url, connectionLimit: 1, multipleStatements: true})
  const customers = new CustomersStore(db)
  const setup = customerSetup(await customers.listStages(customerId), await customers.listFields(customerId))
  const store = new LeadWriteStatements(db, new LeadCountsStore(db, customers), new LeadSearchIndex(db, customers))
  const matches = new LeadMatchStore(db)
  const send = async (connection: mysql.PoolConnection, statements: readonly Statement[]) => {
    await connection.query(
      statements.map((statement) => statement.sql).join(';\n'),
      statements.flatMap((statement) => [...statement.bindings]),
    )
  }
  return {
    run: async (rows) => {
      const inputs = rows.map((raw) => parseLeadInput(raw, setup))
      const now = Date.now()
      const leads = inputs.map((input) => newLead(customerId, input, {stageId: setup.stages[0]!.id, sourceType: 'import'}, now))
      const {locks, read} = matchCandidates(matches, customerId, inputs, true)
      const first = [{sql: 'START TRANSACTION', bindings: []}, ...locks, ...(read ? [read.statement] : [])]
      const second = [...store.upsertStatements(leads, new Map()), {sql: 'COMMIT', bindings: []}]
      const connection = await pool.getConnection()
      try {
        const started = performance.now()
        await send(connection, first)
        await send(connection, second)
        return performance.now() - started
      } finally {
        connection.release()
      }
    },
    close: async () => {
      await pool.end()
      await db.destroy()
    },
  }
}

/** How long a settle may take at most; past it the phase runs anyway, and says so. */
const SETTLE_LIMIT_MS = 30_000

/**
 * Waits until InnoDB has caught up with the previous phase's background work: the undo history
 * its updates left for purge (a bulk merge of 500 rows leaves 500) and the dirty pages it has to
 * flush. Both slow whatever runs next, the API or the floor, by an amount that depends on where
 * the previous phase ended, so every timed phase starts from a settled database. Returns the
 * seconds waited (MySQL 8 and MariaDB both keep these counters in INNODB_METRICS).
 */
export async function settleDatabase(url: string): Promise<number> {
  const pool = mysql.createPool({uri: url, connectionLimit: 1})
  const started = performance.now()
  try {
    for (;;) {
      const [rows] = await pool.query(
        "SELECT name, `count` AS value FROM information_schema.INNODB_METRICS WHERE name IN ('trx_rseg_history_len', 'buffer_pool_pages_dirty')",
      )
      const read = (name: string) => Number((rows as Array<{name: string; value: number | string}>).find((row) => row.name === name)?.value ?? 0)
      if ((read('trx_rseg_history_len') < 100 && read('buffer_pool_pages_dirty') < 1000) || performance.now() - started > SETTLE_LIMIT_MS) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    return (performance.now() - started) / 1000
  } finally {
    await pool.end()
  }
}
