/**
 * List-page latency on 10,000 leads, embedded SQLite against MariaDB, through the real daemon
 * over loopback HTTP. Run: npm run build && node dist/bench/list-latency.js
 * MariaDB is used when LEADS_BENCH_MYSQL_URL (or LEADS_TEST_MYSQL_URL) names a migrated-or-empty database.
 */
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {startDaemon} from '../daemon/server.js'
import {loadConfig} from '../src/config/config.js'
import {createDb} from '../src/db/knex.js'
import {createLogger} from '../src/log/logger.js'
import {createStores} from '../src/stores.js'
import type {LeadRecord} from '../src/leads/lead-types.js'

const LEADS = 10_000
const SAMPLES = 200
const MASTER_KEY = 'cd'.repeat(32)

interface Case {
  name: string
  query: (state: {deepCursor: string}) => string
}

const CASES: Case[] = [
  {name: 'first page (defaults)', query: () => ''},
  {name: 'page of 100', query: () => '?limit=100'},
  {name: 'cursor page at lead 5,000', query: ({deepCursor}) => `?cursor=${encodeURIComponent(deepCursor)}`},
  {name: 'offset 5,000', query: () => '?offset=5000'},
  {name: 'status=won filter', query: () => '?status=won'},
  {name: 'sort created_at desc', query: () => '?sort_by=created_at&sort_dir=desc'},
  {name: 'search by name', query: () => '?search=Lead%20077'},
  {name: 'search by phone digits', query: () => '?search=555-01'},
]

async function measure(label: string, env: Record<string, string>): Promise<Map<string, number[]>> {
  const config = loadConfig({LEADS_MASTER_KEY: MASTER_KEY, LEADS_PORT: '0', LEADS_LOG_LEVEL: 'silent', ...env})
  // The bench's own handle, to seed leads straight into the store; the daemon runs on it too.
  const db = createDb(config.database)
  const daemon = await startDaemon(config, createLogger('silent'), {autoMigrate: true, db})
  const {services} = daemon
  try {
    const customer = await services.customers.create({name: `bench ${label}`})
    const stages = await services.customers.listStages(customer.id)
    const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read']})
    const base = Date.now() - LEADS * 1000
    const leads: LeadRecord[] = Array.from({length: LEADS}, (_, i) => ({
      id: randomUUID(),
      customerId: customer.id,
      sourcePlatform: 'direct',
      sourceType: 'form',
      status: (['active', 'won', 'lost', 'nurture', 'archived'] as const)[i % 5]!,
      createdAt: base + i * 1000,
      updatedAt: base + i * 1000 + (i % 7),
      contactName: `Lead ${String(i).padStart(5, '0')}`,
      contactPhone: `+1 (555) ${String(i % 1000).padStart(3, '0')}-${String(i).padStart(4, '0')}`,
      contactEmail: `lead${i}@example.com`,
      score: i % 100,
      qualified: null,
      stageId: stages[i % stages.length]!.id,
      ownerId: null,
      lastInteractionAt: i % 3 === 0 ? null : base + i * 500,
      interactionCount: i % 4,
      leadLine: i % 2 === 0 ? 'buyer' : 'seller',
      customFields: {lead_line: i % 2 === 0 ? 'buyer' : 'seller'},
    }))
    await (await createStores(db)).leadWrites.insertMany(leads)

    const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}
    const get = async (query: string) => {
      const response = await fetch(`${daemon.url}/api/agents/crm/leads${query}`, {headers})
      if (response.status !== 200) throw new Error(`${query}: ${response.status} ${await response.text()}`)
      return (await response.json()) as {next_cursor: string | null}
    }
    // A cursor halfway through: walk 50 pages of 100.
    let deepCursor = ''
    for (let page = 0; page < 50; page++) deepCursor = (await get(`?limit=100${deepCursor ? `&cursor=${encodeURIComponent(deepCursor)}` : ''}`)).next_cursor!
    deepCursor = (await get(`?cursor=${encodeURIComponent(deepCursor)}`)).next_cursor!

    const results = new Map<string, number[]>()
    for (const benchCase of CASES) {
      const query = benchCase.query({deepCursor})
      for (let i = 0; i < 20; i++) await get(query)
      const times: number[] = []
      for (let i = 0; i < SAMPLES; i++) {
        const started = performance.now()
        await get(query)
        times.push(performance.now() - started)
      }
      results.set(
        benchCase.name,
        times.sort((a, b) => a - b),
      )
    }
    return results
  } finally {
    await daemon.stop()
    await db.destroy()
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-bench-'))
const backends: Array<[string, Record<string, string>]> = [['sqlite', {LEADS_DATABASE_URL: `sqlite://${dir}/bench.db`}]]
const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL'] ?? process.env['LEADS_TEST_MYSQL_URL']
if (mysqlUrl) backends.push(['mariadb', {LEADS_DATABASE_URL: mysqlUrl}])

const results = new Map<string, Map<string, number[]>>()
for (const [label, env] of backends) results.set(label, await measure(label, env))
fs.rmSync(dir, {recursive: true, force: true})

const header = ['case', ...backends.flatMap(([label]) => [`${label} p50 ms`, `${label} p95 ms`]), ...(backends.length > 1 ? ['mariadb/sqlite p50'] : [])]
const rows = CASES.map((benchCase) => {
  const cells = backends.flatMap(([label]) => {
    const times = results.get(label)!.get(benchCase.name)!
    return [percentile(times, 50).toFixed(2), percentile(times, 95).toFixed(2)]
  })
  if (backends.length > 1) {
    const ratio = percentile(results.get('mariadb')!.get(benchCase.name)!, 50) / percentile(results.get('sqlite')!.get(benchCase.name)!, 50)
    cells.push(`${ratio.toFixed(2)}x`)
  }
  return [benchCase.name, ...cells]
})
const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => row[i]!.length)))
const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')
console.log(`GET /api/agents/crm/leads, ${LEADS.toLocaleString('en')} leads of one customer, ${SAMPLES} sequential requests per case over loopback`)
console.log(line(header))
for (const row of rows) console.log(line(row))
