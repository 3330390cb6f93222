/**
 * The push and list workload on a three-node MariaDB Galera cluster (single writer through
 * HAProxy) beside one MariaDB server, in the same run. The cluster is the topology suite's
 * (test/helpers/galera.ts: three mariadbd on loopback as user mysql, rsync state transfer,
 * HAProxy sending every connection to node 1 while it is Synced); the single server is the
 * shared one at 127.0.0.1:3306, in a database of this bench's own. Each target gets its own
 * daemon (role api) and its own customer, seeded by bulk requests of 500 new leads through the
 * API, then rounds alternate between the targets, the order rotating: single creates at c=16
 * (rate) and at c=1 (median, p99) with wrk and bench/wrk/create.lua as push-wrk.ts drives them,
 * bulk requests of 500 new leads, a list page (`?limit=50`) and a search for a first name one
 * lead in eight carries. The ratio cluster/single is taken from the medians over the rounds.
 *
 * Run (as root: the nodes run as mysql over directories it owns):
 *   npm run bench:galera -- [--rounds 4] [--seconds 5] [--leads 50000]
 * with LEADS_BENCH_SINGLE_URL (default mysql://root@127.0.0.1:3306, database leads_galbench_single,
 * dropped and made again) and LEADS_BENCH_REDIS_URL (optional). Every process it starts and its
 * temporary directory go away when it ends, fails or is interrupted; it stops itself after
 * --limit-minutes (default 20). The figures go to bench/results/galera-<ISO 8601 basic time>.json.
 */
import {execFile} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {parseArgs, promisify} from 'node:util'

import mysql from 'mysql2/promise'

import {loadConfig} from '../src/config/config.js'
import {createLogger} from '../src/log/logger.js'
import {createServices} from '../src/services.js'
import {GaleraCluster} from '../test/helpers/galera.js'
import {type DaemonProcess, ROOT, spawnDaemon} from './daemon-process.js'
import {checkoutCommit, writeResults} from './results-file.js'

const WRK = '/usr/bin/wrk'
const SCRIPT = path.join(ROOT, 'bench/wrk/create.lua')
const LEADS = '/api/agents/crm/leads'
const BULK_ROWS = 500
const FIRST_NAMES = ['Grace', 'Ada', 'Alan', 'Linus', 'Barbara', 'Edsger', 'Margaret', 'Donald']
const SEARCH_WORD = 'Grace'
const SEED_LIMIT_MS = 120_000
const BULK_PER_ROUND = 5
const READS_PER_ROUND = 20
const MASTER_KEY = 'cd'.repeat(32)
const DATABASE = 'leads_galbench_single'

const {values: flags} = parseArgs({
  options: {
    rounds: {type: 'string', default: '4'},
    seconds: {type: 'string', default: '5'},
    leads: {type: 'string', default: '50000'},
    'limit-minutes': {type: 'string', default: '20'},
  },
})
const whole = (name: keyof typeof flags): number => {
  const value = Number(flags[name])
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`--${name} takes a whole number above 0`)
    process.exit(2)
  }
  return value
}
const ROUNDS = whole('rounds')
const SECONDS = whole('seconds')
const SEED_LEADS = whole('leads')
if (!fs.existsSync(WRK)) {
  console.error(`no wrk at ${WRK}: apt-get install -y wrk`)
  process.exit(2)
}
// A second cluster on the helper's ports (the topology suite's, say) would join or break the
// first, so the bench waits for none to run rather than start beside it.
const taken = await GaleraCluster.portsInUse()
if (taken.length > 0) {
  console.error(`a Galera cluster already listens on loopback (ports ${taken.join(', ')}): run the bench when it has stopped`)
  process.exit(2)
}
const singleServer = process.env['LEADS_BENCH_SINGLE_URL'] ?? 'mysql://root@127.0.0.1:3306'
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']

// Everything this run starts, so that any way out (an error, a signal, the time limit) stops it.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-bench-galera-'))
const daemons: DaemonProcess[] = []
let cluster: GaleraCluster | null = null
const killEverythingNow = () => {
  for (const daemon of daemons) if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL')
  cluster?.killAllNow()
  fs.rmSync(dir, {recursive: true, force: true})
}
async function dropSingleDatabase(): Promise<void> {
  const admin = await mysql.createConnection({uri: singleServer, connectTimeout: 2000}).catch(() => null)
  await admin?.query(`DROP DATABASE IF EXISTS ${DATABASE}`).catch(() => undefined)
  await admin?.end().catch(() => undefined)
}
/** A way out past the main flow's own `finally`: kills what runs, drops the database, exits. */
const abandon = (code: number) => {
  killEverythingNow()
  void dropSingleDatabase().finally(() => process.exit(code))
}
process.once('exit', killEverythingNow)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => abandon(130))
setTimeout(
  () => {
    console.error(`the bench ran past --limit-minutes ${flags['limit-minutes']}: stopping`)
    abandon(1)
  },
  whole('limit-minutes') * 60_000,
).unref()

interface Target {
  label: 'single' | 'cluster'
  daemon: DaemonProcess
  customerId: string
  token: string
  seeded: number
  seedSeconds: number
}

interface WrkResult {
  requests: number
  duration_us: number
  non201: number
  errors: {connect: number; read: number; write: number; status: number; timeout: number}
  latency_us: {p50: number; p99: number; mean: number; max: number}
}

const execFileAsync = promisify(execFile)
const runId = randomUUID().slice(0, 8)
let burstNumber = 0
let rowNumber = 0

/** One wrk burst of new people (bench/wrk/create.lua, keyed); any answer but 201 fails the run. */
async function wrk(target: Target, concurrency: number, seconds: number): Promise<WrkResult> {
  const burst = burstNumber++
  const args = ['-t1', `-c${concurrency}`, `-d${seconds}s`, '--timeout', '10s', '-s', SCRIPT, `${target.daemon.url}${LEADS}`]
  const {stdout} = await execFileAsync(WRK, [...args, '--', target.token, target.customerId, runId, String(burst)])
  const line = stdout.split('\n').find((candidate) => candidate.startsWith('wrk-result '))
  if (!line) throw new Error(`${target.label} at c=${concurrency}: wrk printed no result:\n${stdout}`)
  const result = JSON.parse(line.slice('wrk-result '.length)) as WrkResult
  const {connect, read, write, timeout} = result.errors
  if (result.non201 > 0 || connect + read + write + timeout > 0) throw new Error(`${target.label} at c=${concurrency}: wrk printed:\n${stdout}`)
  return result
}

/** Milliseconds a request takes, failing the run on any other status than `expected`. */
async function timedRequest(target: Target, pathAndQuery: string, expected: number, body?: unknown): Promise<number> {
  const headers: Record<string, string> = {authorization: `Bearer ${target.token}`, 'x-customer-id': target.customerId}
  if (body !== undefined) Object.assign(headers, {'content-type': 'application/json', 'idempotency-key': randomUUID()})
  const started = performance.now()
  const response = await fetch(`${target.daemon.url}${pathAndQuery}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers,
    ...(body === undefined ? {} : {body: JSON.stringify(body)}),
  })
  const text = await response.text()
  const elapsed = performance.now() - started
  if (response.status !== expected) throw new Error(`${target.label} ${pathAndQuery}: ${response.status} ${text.slice(0, 300)}`)
  return elapsed
}

/** A bulk request of 500 new people: names with one of eight first names, unique emails and phone numbers (10 digits from 4000000000 on; create.lua's start with the burst number). */
function bulkRows(): unknown[] {
  return Array.from({length: BULK_ROWS}, () => {
    const n = rowNumber++
    return {
      contact_name: `${FIRST_NAMES[n % FIRST_NAMES.length]} Galbench${n}`,
      contact_email: `galbench-${runId}-${n}@example.org`,
      contact_phone: `+1 4${String(n).padStart(9, '0')}`,
    }
  })
}
const bulk = (target: Target) => timedRequest(target, `${LEADS}/bulk`, 200, {leads: bulkRows()})

async function prepare(label: Target['label'], databaseUrl: string): Promise<Target> {
  const env = {LEADS_MASTER_KEY: MASTER_KEY, LEADS_DATABASE_URL: databaseUrl, ...(redisUrl ? {LEADS_REDIS_URL: redisUrl} : {})}
  // The operator's part (schema, customer, an internal key: no rate limit) runs here; the daemon runs in its own process.
  const services = await createServices(loadConfig(env), {logger: createLogger('silent'), autoMigrate: true})
  const customer = await services.customers.create({name: `bench galera ${label}`})
  const {token} = await services.keys.issue({
    customerId: customer.id,
    scopes: ['public_api:leads:read', 'public_api:leads:write'],
    internal: true,
    name: `galbench ${runId}`,
  })
  await services.close()
  const daemon = await spawnDaemon(env, 'api')
  daemons.push(daemon)
  const target: Target = {label, daemon, customerId: customer.id, token, seeded: 0, seedSeconds: 0}
  const started = performance.now()
  while (target.seeded < SEED_LEADS && performance.now() - started < SEED_LIMIT_MS) {
    await bulk(target)
    target.seeded += BULK_ROWS
  }
  target.seedSeconds = (performance.now() - started) / 1000
  console.log(`${label}: seeded ${target.seeded} leads by bulk in ${target.seedSeconds.toFixed(0)} s`)
  return target
}

async function recreateDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = await mysql.createConnection({uri: serverUrl})
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`)
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`)
  } finally {
    await admin.end()
  }
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const half = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2
}

interface Samples {
  c16PerSecond: number[]
  c1P50Ms: number[]
  c1P99Ms: number[]
  bulkMs: number[]
  listMs: number[]
  searchMs: number[]
}
const startedAt = new Date()
const loadAtStart = os.loadavg()
const samples: Record<Target['label'], Samples> = {
  single: {c16PerSecond: [], c1P50Ms: [], c1P99Ms: [], bulkMs: [], listMs: [], searchMs: []},
  cluster: {c16PerSecond: [], c1P50Ms: [], c1P99Ms: [], bulkMs: [], listMs: [], searchMs: []},
}
let clusterStartSeconds = 0
let targets: Target[] = []
try {
  const clusterStarted = performance.now()
  cluster = await GaleraCluster.start(dir)
  clusterStartSeconds = (performance.now() - clusterStarted) / 1000
  console.log(`cluster: three nodes Synced and HAProxy up in ${clusterStartSeconds.toFixed(0)} s`)
  await recreateDatabase(cluster.url, 'leads')
  await recreateDatabase(singleServer, DATABASE)
  targets = [await prepare('single', `${singleServer}/${DATABASE}`), await prepare('cluster', `${cluster.url}/leads`)]

  const search = `${LEADS}?limit=50&search=${SEARCH_WORD}`
  const list = `${LEADS}?limit=50`
  // Untimed: the first bursts and reads of each daemon warm its code paths and the database's pages.
  for (const target of targets) {
    await wrk(target, 16, 2)
    await wrk(target, 1, 2)
    await timedRequest(target, list, 200)
    await timedRequest(target, search, 200)
  }
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse()
    for (const target of order) {
      const into = samples[target.label]
      into.c16PerSecond.push(await wrk(target, 16, SECONDS).then((result) => result.requests / (result.duration_us / 1e6)))
      const c1 = await wrk(target, 1, SECONDS)
      into.c1P50Ms.push(c1.latency_us.p50 / 1000)
      into.c1P99Ms.push(c1.latency_us.p99 / 1000)
      for (let i = 0; i < BULK_PER_ROUND; i++) into.bulkMs.push(await bulk(target))
      for (let i = 0; i < READS_PER_ROUND; i++) {
        into.listMs.push(await timedRequest(target, list, 200))
        into.searchMs.push(await timedRequest(target, search, 200))
      }
    }
    console.log(`round ${round} of ${ROUNDS} done`)
  }
} finally {
  for (const daemon of daemons) await daemon.stop()
  await cluster?.stop()
  cluster = null
  fs.rmSync(dir, {recursive: true, force: true})
  await dropSingleDatabase()
}

const figures = (s: Samples) => ({
  c16_creates_per_second: median(s.c16PerSecond),
  c1_create_p50_ms: median(s.c1P50Ms),
  c1_create_p99_ms: median(s.c1P99Ms),
  bulk_500_p50_ms: median(s.bulkMs),
  bulk_500_p99_ms: percentile(s.bulkMs, 99),
  list_page_p50_ms: median(s.listMs),
  list_page_p99_ms: percentile(s.listMs, 99),
  search_p50_ms: median(s.searchMs),
  search_p99_ms: percentile(s.searchMs, 99),
})
const single = figures(samples.single)
const onCluster = figures(samples.cluster)
const ratio = Object.fromEntries(Object.entries(onCluster).map(([key, value]) => [key, value / single[key as keyof typeof single]]))

const result = {
  bench: 'bench/galera.ts',
  command: `node dist/bench/galera.js ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  commit: checkoutCommit().commit,
  machine: {cores: os.cpus().length, node: process.version, load_average_at_start: loadAtStart, load_average_at_end: os.loadavg()},
  settings: {
    rounds: ROUNDS,
    burst_seconds: SECONDS,
    wrk_threads: 1,
    idempotency_keys: true,
    bulk_rows: BULK_ROWS,
    bulk_requests_per_round: BULK_PER_ROUND,
    reads_per_round: READS_PER_ROUND,
    list_query: '?limit=50',
    search_query: `?limit=50&search=${SEARCH_WORD}`,
    seeded_leads: Object.fromEntries(targets.map((target) => [target.label, target.seeded])),
    seed_seconds: Object.fromEntries(targets.map((target) => [target.label, target.seedSeconds])),
    single: 'the shared MariaDB on 127.0.0.1:3306 (innodb_buffer_pool_size 128M), its own database',
    cluster:
      'three MariaDB Galera nodes on loopback (test/helpers/galera.ts: innodb_buffer_pool_size 64M each), HAProxy in TCP mode sending every connection to node 1',
    cluster_start_seconds: clusterStartSeconds,
    redis: Boolean(redisUrl),
    role: 'api',
  },
  figures: {single, cluster: onCluster, cluster_over_single: ratio},
  samples,
}
const file = writeResults('galera', startedAt, result)

console.log(
  `One MariaDB server against a three-node Galera cluster through HAProxy (single writer), ${targets[0]?.seeded} leads seeded per target, ${ROUNDS} rounds alternating:`,
)
const rows: string[][] = [
  ['', 'single', 'cluster', 'cluster/single'],
  ['c=16 creates/s (median of rounds)', 'c16_creates_per_second', 0],
  ['c=1 create median ms', 'c1_create_p50_ms', 2],
  ['c=1 create p99 ms', 'c1_create_p99_ms', 2],
  ['bulk of 500 median ms', 'bulk_500_p50_ms', 0],
  ['bulk of 500 p99 ms', 'bulk_500_p99_ms', 0],
  ['list page median ms', 'list_page_p50_ms', 2],
  ['list page p99 ms', 'list_page_p99_ms', 2],
  ['search median ms', 'search_p50_ms', 2],
  ['search p99 ms', 'search_p99_ms', 2],
].map((row) => {
  if (typeof row[2] !== 'number') return row as string[]
  const [name, key, digits] = row as [string, keyof typeof single, number]
  return [name, single[key].toFixed(digits), onCluster[key].toFixed(digits), `${ratio[key]!.toFixed(2)}x`]
})
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
for (const row of rows) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
console.log(
  `load average at start ${loadAtStart.map((x) => x.toFixed(2)).join(' ')}, at end ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
)
console.log(`results: ${path.relative(process.cwd(), file)}`)
