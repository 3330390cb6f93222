/**
 * Push throughput through the real daemon (its own process) over loopback HTTP, SQLite against
 * MariaDB (+ Redis when LEADS_BENCH_REDIS_URL is set): bulk 500 new rows, bulk 500 rows that all
 * merge, single create at concurrency 1 and 16. With MariaDB it also measures the floor under a
 * create in the same run (bench/push-floor.ts): before and after the API, and in the same minutes
 * as the API (the bars): c=1 interleaved with its sequential creates, c=16 in alternated bursts,
 * each bulk request followed by its statements alone. LEADS_BENCH_PROFILE=<dir> profiles the daemon.
 * Run: npm run build && LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench node dist/bench/push.js
 */
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {loadConfig} from '../src/config/config.js'
import {createDb} from '../src/db/knex.js'
import {migrateLatest} from '../src/db/migrate.js'
import {createLogger} from '../src/log/logger.js'
import {createServices} from '../src/services.js'
import {spawnDaemon} from './daemon-process.js'
import {cpuTimes, stealReport} from './host-steal.js'
import {type CpuShares, cpuSharesLine, databasePid, meterCpu} from './process-cpu.js'
import {LoadConnection, type LoadResponse} from './http-load.js'
import {type FloorFigures, type FloorTables, measureFloor, median, openBulkFloor, openFloor, p99, type Percentiles, settleDatabase} from './push-floor.js'

const MASTER_KEY = 'cd'.repeat(32)
const BULK_REQUESTS = 30
const SINGLE_SEQUENTIAL = 300
/**
 * Untimed sequential creates before the timed ones, then as many untimed floor transactions
 * (MariaDB). The single-create path is cold after the bulk phase: over its first few thousand
 * creates V8 is still optimising it, and its compiler threads took as much CPU as the main
 * thread's creates (docs/performance.md, "Why the benches warm up"). A daemon in service has long passed that.
 */
const SEQUENTIAL_WARMUP = 3000
/** Bursts of creates at c=16 alternated with as many of the floor's transactions (MariaDB), and their size. */
const ALTERNATED_ROUNDS = 6
const ALTERNATED_BURST = 500
/** Sequential creates between two runs of as many floor transactions (MariaDB). */
const SEQUENTIAL_BLOCK = 10
const SINGLE_CONCURRENT = 3000
/**
 * Untimed creates at c=16 before the timed ones, and the same number of untimed transactions in
 * the floor: the first thousand or so at c=16 run slower on both sides (JIT for groups of many,
 * InnoDB's adaptive hash and buffer pool for the index ranges they touch), and the phase
 * before them is sequential.
 */
const CONCURRENT_WARMUP = 1000
const CONCURRENCY = 16

interface Figures {
  bulkNewMedianMs: number
  bulkNewP99Ms: number
  bulkMergeMedianMs: number
  bulkMergeP99Ms: number
  singleMedianMs: number
  singleP99Ms: number
  concurrentPerSecond: number
  concurrentMedianMs: number
  concurrentP99Ms: number
  /** CPU time of the daemon, this process (the client) and the database over the timed concurrent creates. */
  concurrentCpu: CpuShares
  /** MariaDB only: the same statements as a bulk request of new leads, sent straight through mysql2, alternated with the API's. */
  bulkFloor?: Percentiles
  /** MariaDB only: the floor's c=1 transactions into copies of the service's tables, interleaved with the sequential creates. */
  singleFloor?: Percentiles
  /** MariaDB only: creates/s at c=16 in bursts alternated with bursts of the floor's transactions. */
  alternated?: {api: number; floor: number}
}

async function timed(work: () => Promise<LoadResponse>, expected: number): Promise<number> {
  const started = performance.now()
  const response = await work()
  if (response.status !== expected) throw new Error(`expected ${expected}, got ${response.status}: ${response.text.slice(0, 300)}`)
  return performance.now() - started
}

async function measure(label: string, env: Record<string, string>): Promise<Figures> {
  const daemonEnv = {LEADS_MASTER_KEY: MASTER_KEY, ...env}
  // The operator's part (schema, customer, key) runs here; the daemon runs in its own process.
  const services = await createServices(loadConfig(daemonEnv), {logger: createLogger('silent'), autoMigrate: true})
  const customer = await services.customers.create({name: `bench ${label}`})
  const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
  await services.close()
  const daemon = await spawnDaemon(daemonEnv)
  // One keep-alive connection per request in flight: the sequential phases use the first.
  const connections = await Promise.all(Array.from({length: CONCURRENCY}, () => LoadConnection.open(daemon.url)))
  const post = (connection: LoadConnection, path: string, headers: Record<string, string>, body: unknown) =>
    connection.post(path, headers, JSON.stringify(body))
  const one = connections[0]!
  try {
    const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}
    const bulkUrl = '/api/agents/crm/leads/bulk'
    const createUrl = '/api/agents/crm/leads'
    const rows = (batch: number) =>
      Array.from({length: 500}, (_, i) => ({
        contact_name: `Bulk ${batch}-${i}`,
        contact_email: `bulk-${batch}-${i}@example.org`,
        contact_phone: `+1 (${String(200 + batch).padStart(3, '0')}) 555-${String(i).padStart(4, '0')}`,
        custom_fields: {lead_line: i % 2 ? 'buyer' : 'seller'},
      }))

    const mysqlUrl = env['LEADS_DATABASE_URL']?.startsWith('mysql') ? env['LEADS_DATABASE_URL'] : undefined
    const bulkNew: number[] = []
    const bulkMerge: number[] = []
    // On MariaDB each bulk request of new leads is followed by the same statements for as many
    // other new people straight through mysql2, so the API and the database's own share are
    // measured in the same minutes.
    const bulkFloor = mysqlUrl ? await openBulkFloor(mysqlUrl, customer.id) : null
    const bulkFloorTimes: number[] = []
    try {
      for (let batch = 0; batch < BULK_REQUESTS; batch++) {
        const leads = rows(batch)
        bulkNew.push(await timed(() => post(one, bulkUrl, {...headers, 'idempotency-key': randomUUID()}, {leads}), 200))
        if (bulkFloor) bulkFloorTimes.push(await bulkFloor.run(rows(BULK_REQUESTS + batch)))
        bulkMerge.push(
          await timed(
            () =>
              post(
                one,
                bulkUrl,
                {...headers, 'idempotency-key': randomUUID()},
                {leads: leads.map((lead) => ({...lead, contact_name: `${lead.contact_name} v2`}))},
              ),
            200,
          ),
        )
      }
    } finally {
      await bulkFloor?.close()
    }

    if (mysqlUrl) settled.push(await settleDatabase(mysqlUrl))
    const single: number[] = []
    // On MariaDB the sequential creates alternate, block by block, with the floor's transactions
    // into copies of the service's tables: a create at c=1 here moves by half from one minute to
    // the next (docs/performance.md), and both then see the same minutes.
    const floor = mysqlUrl ? await openFloor(mysqlUrl, 'service', 1) : null
    const singleFloor: number[] = []
    try {
      const floorTransactions = floor ? Array.from({length: SINGLE_SEQUENTIAL}, (_, i) => floor.build(i)) : []
      for (let i = 0; i < SEQUENTIAL_WARMUP; i++) {
        await timed(
          () =>
            post(
              one,
              createUrl,
              {...headers, 'idempotency-key': randomUUID()},
              {contact_name: `Warm ${i}`, contact_email: `warm-${i}@example.org`, contact_phone: `555-600-${String(i).padStart(4, '0')}`},
            ),
          201,
        )
      }
      for (let i = 0; floor && i < SEQUENTIAL_WARMUP; i++) await floor.run(floor.build(SINGLE_SEQUENTIAL + i))
      // The warm-up's writes leave pages to flush: the timed creates start from a settled database too.
      if (mysqlUrl) settled.push(await settleDatabase(mysqlUrl))
      for (let i = 0; i < SINGLE_SEQUENTIAL; i++) {
        single.push(
          await timed(
            () =>
              post(
                one,
                createUrl,
                {...headers, 'idempotency-key': randomUUID()},
                {contact_name: `Solo ${i}`, contact_email: `solo-${i}@example.org`, contact_phone: `555-300-${String(i).padStart(4, '0')}`},
              ),
            201,
          ),
        )
        if (!floor || (i + 1) % SEQUENTIAL_BLOCK !== 0) continue
        for (const transaction of floorTransactions.slice(i + 1 - SEQUENTIAL_BLOCK, i + 1)) {
          const started = performance.now()
          await floor.run(transaction)
          singleFloor.push(performance.now() - started)
        }
      }
    } finally {
      await floor?.close()
    }

    let next = 0
    const concurrent: number[] = []
    const atConcurrency = (count: number) =>
      Promise.all(
        connections.map(async (connection) => {
          while (next < count) {
            const i = next++
            const took = await timed(
              () =>
                post(
                  connection,
                  createUrl,
                  {...headers, 'idempotency-key': randomUUID()},
                  {contact_name: `Busy ${i}`, contact_email: `busy-${i}@example.org`, contact_phone: `+1 555-4${String(i).padStart(5, '0')}`},
                ),
              201,
            )
            concurrent.push(took)
          }
        }),
      )
    await atConcurrency(CONCURRENT_WARMUP)
    concurrent.length = 0
    const cpu = meterCpu({daemon: daemon.child.pid, client: process.pid, database: mysqlUrl ? databasePid() : null})
    const started = performance.now()
    await atConcurrency(CONCURRENT_WARMUP + SINGLE_CONCURRENT)
    const seconds = (performance.now() - started) / 1000
    const concurrentCpu = cpu.stop()
    const concurrentTimes = concurrent.splice(0)
    const alternated = mysqlUrl
      ? await alternateWithFloor(
          mysqlUrl,
          (count) => atConcurrency(count),
          () => next,
        )
      : undefined
    for (const connection of connections) connection.close()
    await daemon.stop()
    return {
      ...(alternated ? {alternated} : {}),
      ...(mysqlUrl
        ? {bulkFloor: {median: median(bulkFloorTimes), p99: p99(bulkFloorTimes)}, singleFloor: {median: median(singleFloor), p99: p99(singleFloor)}}
        : {}),
      bulkNewMedianMs: median(bulkNew),
      bulkNewP99Ms: p99(bulkNew),
      bulkMergeMedianMs: median(bulkMerge),
      bulkMergeP99Ms: p99(bulkMerge),
      singleMedianMs: median(single),
      singleP99Ms: p99(single),
      concurrentPerSecond: SINGLE_CONCURRENT / seconds,
      concurrentMedianMs: median(concurrentTimes),
      concurrentP99Ms: p99(concurrentTimes),
      concurrentCpu,
    }
  } finally {
    for (const connection of connections) connection.close()
    await daemon.stop()
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-bench-'))
const backends: Array<[string, Record<string, string>]> = [['sqlite', {LEADS_DATABASE_URL: `sqlite://${dir}/bench.db`}]]
const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
if (mysqlUrl) backends.push(['mariadb', {LEADS_DATABASE_URL: mysqlUrl, ...(redisUrl ? {LEADS_REDIS_URL: redisUrl} : {})}])
const results: Array<[string, Figures]> = []
// The floor is measured just before and just after the API on MariaDB: the API's writes leave
// InnoDB work behind (purge, page flushing) that slows what runs next, so the API is compared
// with the faster of the two, never with a floor its own run depressed. Each time both floors
// run: into copies of the service's own tables (the bars' floor) and into the scratch tables
// of the earlier floor (see push-floor.ts).
const FLOOR_TABLES: readonly FloorTables[] = ['service', 'scratch']
const floors: Array<{tables: FloorTables; when: 'before' | 'after'; figures: FloorFigures}> = []
const measureFloors = async (when: 'before' | 'after') => {
  for (const tables of FLOOR_TABLES) {
    settled.push(await settleDatabase(mysqlUrl!))
    floors.push({tables, when, figures: await measureFloor(mysqlUrl!, tables, SINGLE_SEQUENTIAL, SINGLE_CONCURRENT, CONCURRENCY, CONCURRENT_WARMUP)})
  }
}
/** Seconds each wait for a settled database took (settleDatabase), in order. */
const settled: number[] = []
// The service-table floor copies the schema's leads and events tables: migrate before it runs.
if (mysqlUrl) {
  const db = createDb({client: 'mysql', url: mysqlUrl})
  await migrateLatest(db)
  await db.destroy()
}
const cpuAtStart = cpuTimes()
for (const [label, env] of backends) {
  if (label === 'mariadb') await measureFloors('before')
  if (label === 'mariadb') settled.push(await settleDatabase(mysqlUrl!))
  results.push([label, await measure(label, env)])
  if (label === 'mariadb') await measureFloors('after')
}
const cpuAtEnd = cpuTimes()
fs.rmSync(dir, {recursive: true, force: true})

/**
 * Creates at c=16 in ALTERNATED_ROUNDS bursts of ALTERNATED_BURST, each followed by as many of
 * the floor's transactions (copies of the service's tables) at c=16: the two rates over the same
 * minutes. The floor and the API measured a minute apart differ by up to half on this machine
 * (docs/performance.md). `create(upTo)` runs the API's creates until its counter reaches `upTo`.
 */
async function alternateWithFloor(url: string, create: (upTo: number) => Promise<unknown>, counter: () => number): Promise<{api: number; floor: number}> {
  const floor = await openFloor(url, 'service', CONCURRENCY)
  try {
    const transactions = Array.from({length: CONCURRENT_WARMUP + ALTERNATED_ROUNDS * ALTERNATED_BURST}, (_, i) => floor.build(i))
    let next = 0
    const floorBurst = (count: number) =>
      Promise.all(
        Array.from({length: CONCURRENCY}, async () => {
          while (next < count) await floor.run(transactions[next++]!)
        }),
      )
    await floorBurst(CONCURRENT_WARMUP)
    const took = {api: 0, floor: 0}
    for (let round = 0; round < ALTERNATED_ROUNDS; round++) {
      let started = performance.now()
      await create(counter() + ALTERNATED_BURST)
      took.api += performance.now() - started
      started = performance.now()
      await floorBurst(next + ALTERNATED_BURST)
      took.floor += performance.now() - started
    }
    const total = ALTERNATED_ROUNDS * ALTERNATED_BURST
    return {api: (1000 * total) / took.api, floor: (1000 * total) / took.floor}
  } finally {
    await floor.close()
  }
}

const metrics: Array<[string, Exclude<keyof Figures, 'bulkFloor' | 'singleFloor' | 'alternated' | 'concurrentCpu'>, string]> = [
  ['bulk 500 new rows, median ms', 'bulkNewMedianMs', '< 50'],
  ['bulk 500 new rows, p99 ms', 'bulkNewP99Ms', ''],
  ['bulk 500 merging rows, median ms', 'bulkMergeMedianMs', '< 200'],
  ['bulk 500 merging rows, p99 ms', 'bulkMergeP99Ms', ''],
  ['single create c=1, median ms', 'singleMedianMs', '< 10'],
  ['single create c=1, p99 ms', 'singleP99Ms', ''],
  [`single create c=${CONCURRENCY}, creates/s`, 'concurrentPerSecond', '>= 400'],
  [`single create c=${CONCURRENCY}, median ms`, 'concurrentMedianMs', ''],
  [`single create c=${CONCURRENCY}, p99 ms`, 'concurrentP99Ms', ''],
]
console.log(
  `Push through the daemon over loopback: ${BULK_REQUESTS} bulk requests of each kind, ${SINGLE_SEQUENTIAL} sequential single creates (after ${SEQUENTIAL_WARMUP} untimed, as in the floor interleaved with them) and ${SINGLE_CONCURRENT} concurrent ones (after ${CONCURRENT_WARMUP} untimed, as in the floor), each with an Idempotency-Key`,
)
const header = ['metric', ...results.map(([label]) => label), ...(results.length > 1 ? ['mariadb/sqlite'] : []), 'bar (mariadb)']
const lines = metrics.map(([name, key, bar]) => {
  const cells = results.map(([, figures]) => figures[key].toFixed(1))
  if (results.length > 1) cells.push(`${(results[1]![1][key] / results[0]![1][key]).toFixed(2)}x`)
  return [name, ...cells, bar]
})
const widths = header.map((cell, i) => Math.max(cell.length, ...lines.map((line) => line[i]!.length)))
for (const line of [header, ...lines]) console.log(line.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))

if (mysqlUrl) {
  const api = results[1]![1]
  const described: Record<FloorTables, string> = {
    service: 'into copies of the service’s leads and events tables',
    scratch: 'into the scratch tables of the earlier floor',
  }
  for (const {tables, when, figures} of floors) {
    console.log(
      `Floor on MariaDB ${when} the API, ${described[tables]} (the same two-insert transaction straight through mysql2): c=1 median ${figures.single.median.toFixed(2)} ms, p99 ${figures.single.p99.toFixed(2)} ms; c=${CONCURRENCY} ${figures.concurrentPerSecond.toFixed(0)} transactions/s`,
    )
  }
  for (const tables of FLOOR_TABLES) {
    const of = floors.filter((floor) => floor.tables === tables).map((floor) => floor.figures)
    const fastest = {median: Math.min(...of.map((floor) => floor.single.median)), rate: Math.max(...of.map((floor) => floor.concurrentPerSecond))}
    console.log(
      `API against the faster floor ${described[tables]}, measured minutes apart: c=1 ${(api.singleMedianMs / fastest.median).toFixed(1)}x the floor's time, c=${CONCURRENCY} ${((100 * api.concurrentPerSecond) / fastest.rate).toFixed(0)}% of the floor's rate`,
    )
  }
  // The bars (MariaDB + Redis) are taken against the floor in the same minutes: c=16 at least 40%
  // of its rate, c=1 within 3x of its time. Measured minutes apart, the floor alone moves by up to
  // half on this machine (the before and after lines above).
  const alternated = api.alternated!
  console.log(
    `c=${CONCURRENCY} alternated with the floor ${described.service}, ${ALTERNATED_ROUNDS} bursts of ${ALTERNATED_BURST} each (the same minutes; the bar): API ${alternated.api.toFixed(0)} creates/s, floor ${alternated.floor.toFixed(0)} transactions/s; the API ${((100 * alternated.api) / alternated.floor).toFixed(0)}% of the floor's rate`,
  )
  const interleaved = api.singleFloor!
  console.log(
    `c=1 against the floor ${described.service}, interleaved with the API's sequential creates ${SEQUENTIAL_BLOCK} by ${SEQUENTIAL_BLOCK} (the same minutes; the bar): floor median ${interleaved.median.toFixed(2)} ms, p99 ${interleaved.p99.toFixed(2)} ms; the API ${(api.singleMedianMs / interleaved.median).toFixed(2)}x the floor's time`,
  )
  console.log(cpuSharesLine(`CPU over the API's c=${CONCURRENCY} creates`, api.concurrentCpu, SINGLE_CONCURRENT, 'create'))
  for (const {tables, when, figures} of floors) {
    console.log(
      cpuSharesLine(`CPU over the ${tables}-table floor's c=${CONCURRENCY} transactions (${when})`, figures.concurrentCpu, SINGLE_CONCURRENT, 'transaction'),
    )
  }
  console.log(
    `Bulk 500 new rows: API median ${api.bulkNewMedianMs.toFixed(1)} ms, p99 ${api.bulkNewP99Ms.toFixed(1)} ms; the same statements straight through mysql2, each after an API request (the database's own share) median ${api.bulkFloor!.median.toFixed(1)} ms, p99 ${api.bulkFloor!.p99.toFixed(1)} ms`,
  )
}
if (mysqlUrl)
  console.log(
    `Waited for InnoDB to settle (purge history and dirty pages) before each timed MariaDB phase: ${settled.map((seconds) => `${seconds.toFixed(1)} s`).join(', ')}`,
  )
console.log(stealReport(cpuAtStart, cpuAtEnd))
