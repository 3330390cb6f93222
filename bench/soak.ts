/**
 * Soak: creates (new people and merges), lists and bulk requests together at a fixed rate against
 * the daemon in its own process on MariaDB + Redis, delivering to a local HTTPS receiver that
 * answers 500 to one attempt in 30. Prints throughput, latency percentiles, errors by kind,
 * deliveries by outcome and the daemon's RSS and live heap over time; exits 1 when an event was not
 * delivered, an answer was an unexpected 5xx, or after warm-up (the first third) RSS or the live
 * heap after a full collection grew more than 10%.
 * Requests without an answer within 30 s are reported with the errors by kind.
 *
 * Run: npm run soak -- --minutes 10 --rate 200
 * (LEADS_SOAK_MYSQL_URL and LEADS_SOAK_REDIS_URL name the servers; a database of its own is created
 * and dropped; loopback only, and every loop ends with the run.)
 */
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import https from 'node:https'
import type {AddressInfo} from 'node:net'
import path from 'node:path'
import {monitorEventLoopDelay} from 'node:perf_hooks'
import {parseArgs} from 'node:util'

import mysql from 'mysql2/promise'

import {loadConfig} from '../src/config/config.js'
import {createServices} from '../src/services.js'
import {ROOT, spawnDaemon} from './daemon-process.js'
import {LoadConnection, type LoadResponse} from './http-load.js'

const {values: args} = parseArgs({options: {minutes: {type: 'string', default: '10'}, rate: {type: 'string', default: '200'}}})
const MINUTES = Number(args.minutes)
const RATE = Number(args.rate)
if (!(MINUTES > 0 && MINUTES <= 120 && RATE > 0 && RATE <= 2000)) throw new Error('--minutes must be in (0, 120] and --rate in (0, 2000]')
const MYSQL = process.env['LEADS_SOAK_MYSQL_URL'] ?? 'mysql://root@127.0.0.1:3306'
const REDIS = process.env['LEADS_SOAK_REDIS_URL'] ?? 'redis://127.0.0.1:6379/13'
const CONNECTIONS = 32
const RSS_GROWTH_LIMIT = 0.1
/** An answer later than this counts as an error of its own, and its connection is replaced. */
const ANSWER_TIMEOUT_MS = 30_000

// The run ends by itself whatever happens: the load, the drain and the report have this long.
const watchdog = setTimeout(
  () => {
    console.log('soak: FAILED: did not finish in time')
    process.exit(1)
  },
  (MINUTES * 60 + 300) * 1000,
)
watchdog.unref()

// The receiver: every delivery id that arrived, and one attempt in 30 refused so retries run too.
const tls = path.join(ROOT, 'test/fixtures/tls')
const delivered = new Set<string>()
let attempts = 0
const receiver = https.createServer(
  {key: fs.readFileSync(path.join(tls, 'server-key.pem')), cert: fs.readFileSync(path.join(tls, 'server-cert.pem'))},
  (request, response) => {
    request.resume()
    request.on('end', () => {
      attempts++
      if (attempts % 30 === 0) return void response.writeHead(500).end('not now')
      delivered.add(String(request.headers['x-service-delivery']))
      response.writeHead(200).end('ok')
    })
  },
)
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const receiverUrl = `https://localhost:${(receiver.address() as AddressInfo).port}/hooks`

// A database of the soak's own.
const database = `leads_soak_${process.pid}`
const admin = await mysql.createConnection({uri: MYSQL})
await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4`)
const env = {
  LEADS_DATABASE_URL: `${MYSQL}/${database}`,
  LEADS_REDIS_URL: REDIS,
  LEADS_MASTER_KEY: 'cd'.repeat(32),
  LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
  LEADS_METRICS: '1',
  // As the image runs it (Dockerfile).
  MALLOC_ARENA_MAX: '2',
  NODE_EXTRA_CA_CERTS: path.join(tls, 'ca.pem'),
}
const services = await createServices(loadConfig(env), {autoMigrate: true})
const customer = await services.customers.create({name: 'Soak Realty'})
const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read', 'public_api:leads:write'], internal: true})
await services.webhooks.create(customer.id, {url: receiverUrl, event_types: ['lead.created'], retry_attempts: 5, timeout_seconds: 5})
await services.close()

const daemon = await spawnDaemon(env)
const pid = daemon.child.pid!
const rssMb = () => {
  const status = fs.readFileSync(`/proc/${pid}/status`, {encoding: 'utf8', flag: 'r'})
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024
}
const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}
const idle = await Promise.all(Array.from({length: CONNECTIONS}, () => LoadConnection.open(daemon.url)))

type Kind = 'create' | 'merge' | 'list' | 'bulk'
const latencies: Record<Kind, number[]> = {create: [], merge: [], list: [], bulk: []}
const statuses = new Map<string, number>()
const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1)
let people = 0
let skipped = 0
let cursor: string | null = null

/** One request of the mix: 60% new people, 10% merges into earlier ones, 25% list pages, 5% bulk of 50. */
function nextRequest(): {kind: Kind; send: (connection: LoadConnection) => Promise<LoadResponse>; expected: number} {
  const roll = Math.random()
  const key = {...headers, 'idempotency-key': randomUUID()}
  if (roll < 0.6 || people === 0) {
    const i = people++
    return {
      kind: 'create',
      expected: 201,
      send: (c) =>
        c.post(
          '/api/agents/crm/leads',
          key,
          JSON.stringify({contact_name: `Soak ${i}`, contact_email: `soak${i}@example.org`, contact_phone: `555${String(i).padStart(7, '0')}`}),
        ),
    }
  }
  if (roll < 0.7) {
    const i = Math.floor(Math.random() * people)
    return {
      kind: 'merge',
      expected: 201,
      send: (c) => c.post('/api/agents/crm/leads', key, JSON.stringify({contact_email: `SOAK${i}@example.org`, custom_fields: {lead_line: 'seller'}})),
    }
  }
  if (roll < 0.95) {
    const query = cursor ? `limit=50&cursor=${encodeURIComponent(cursor)}` : `limit=50&sort_by=updated_at&search=soak`
    return {kind: 'list', expected: 200, send: (c) => c.get(`/api/agents/crm/leads?${query}`, headers)}
  }
  const first = people
  people += 50
  const leads = Array.from({length: 50}, (_, k) => ({contact_name: `Soak ${first + k}`, contact_email: `soak${first + k}@example.org`}))
  return {kind: 'bulk', expected: 200, send: (c) => c.post('/api/agents/crm/leads/bulk', key, JSON.stringify({leads}))}
}

// Open loop at RATE: a request every 1/RATE s while a connection is free; past that it is counted as skipped.
const started = performance.now()
const durationMs = MINUTES * 60_000
const rss: Array<{atS: number; mb: number}> = []
/**
 * The daemon's memory right after its latest full collection (leads_memory_after_major_gc_bytes),
 * sampled with RSS, and how many full collections it had had (leads_major_gc_total): a sample
 * repeats the latest collection's reading until the next one, however old it is.
 */
const afterGc: Array<{atS: number; heapMb: number; rssMb: number; collections: number}> = []
const sampler = setInterval(() => {
  if (daemon.child.exitCode !== null) return
  const atS = Math.round((performance.now() - started) / 1000)
  rss.push({atS, mb: rssMb()})
  fetch(`${daemon.url}/metrics`)
    .then((response) => response.text())
    .then((text) => {
      const read = (kind: string) => Number(new RegExp(`leads_memory_after_major_gc_bytes\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? NaN) / 2 ** 20
      const collections = Number(/^leads_major_gc_total (\d+)$/m.exec(text)?.[1] ?? NaN)
      if (!Number.isNaN(read('heap_used'))) afterGc.push({atS, heapMb: read('heap_used'), rssMb: read('rss'), collections})
    })
    .catch(() => undefined)
}, 5_000)
// The soak's own event loop (load client and receiver): a stall here would read as the daemon's.
const clientLoop = monitorEventLoopDelay({resolution: 10})
clientLoop.enable()
const inFlight = new Set<Promise<void>>()
for (let sent = 0; ; sent++) {
  const due = started + (sent * 1000) / RATE
  const now = performance.now()
  if (now - started >= durationMs) break
  if (due > now) await new Promise((resolve) => setTimeout(resolve, due - now))
  const popped = idle.pop()
  // The daemon closes a keep-alive connection idle for 65 s (the deepest of the idle stack, at a
  // quiet moment): open a fresh one, as any client's pool does.
  const connection = popped?.closed ? await LoadConnection.open(daemon.url) : popped
  if (!connection) {
    // Behind schedule with every connection busy: skip this one, and let the answers come in.
    skipped++
    await new Promise((resolve) => setImmediate(resolve))
    continue
  }
  const request = nextRequest()
  const t0 = performance.now()
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer within 30 s')), ANSWER_TIMEOUT_MS)))
  const task: Promise<void> = Promise.race([request.send(connection), timedOut])
    .then((response) => {
      latencies[request.kind].push(performance.now() - t0)
      count(response.status === request.expected ? `${response.status}` : `${request.kind} ${response.status}`)
      if (request.kind === 'list' && response.status === 200) cursor = (JSON.parse(response.text) as {next_cursor: string | null}).next_cursor
    })
    .catch(async (error: Error) => {
      count(`${request.kind} failed: ${error.message}`)
      // A connection left mid-answer cannot take another request: a fresh one replaces it.
      connection.close()
      return LoadConnection.open(daemon.url).then((fresh) => void idle.push(fresh))
    })
    .then(() => {
      if (!idle.includes(connection) && !connection.closed) idle.push(connection)
    })
    .finally(() => {
      clearTimeout(timer)
      inFlight.delete(task)
    })
  inFlight.add(task)
}
await Promise.all(inFlight)
const seconds = (performance.now() - started) / 1000
clearInterval(sampler)

// Every event owed must arrive: wait until no delivery is pending (at most two minutes), then compare.
const db = await mysql.createConnection({uri: `${MYSQL}/${database}`})
for (let waited = 0; waited < 120; waited++) {
  const [[row]] = (await db.query(`SELECT COUNT(*) AS n FROM deliveries WHERE status IN ('pending', 'delivering')`)) as unknown as [[{n: number}]]
  if (Number(row.n) === 0) break
  await new Promise((resolve) => setTimeout(resolve, 1000))
}
const [deliveries] = (await db.query(`SELECT d.id, d.status FROM deliveries d`)) as unknown as [Array<{id: string; status: string}>]
const [[events]] = (await db.query(`SELECT COUNT(*) AS n FROM events`)) as unknown as [[{n: number}]]
const lost = deliveries.filter((delivery) => !delivered.has(delivery.id))
const byOutcome = new Map<string, number>()
for (const delivery of deliveries) byOutcome.set(delivery.status, (byOutcome.get(delivery.status) ?? 0) + 1)
await db.end()

for (const connection of idle) connection.close()
await daemon.stop()
receiver.close()
await admin.query(`DROP DATABASE \`${database}\``)
await admin.end()

// The report.
const pct = (values: number[], p: number) =>
  values.length === 0 ? 0 : [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!
const total = Object.values(latencies).reduce((sum, values) => sum + values.length, 0)
console.log(`Soak: ${MINUTES} min at ${RATE} requests/s (${CONNECTIONS} keep-alive connections), MariaDB + Redis, daemon role all in its own process`)
console.log(`requests: ${total} answered in ${seconds.toFixed(0)} s = ${(total / seconds).toFixed(1)}/s; ${skipped} not sent (every connection busy)`)
console.log('kind     count   p50 ms   p99 ms   max ms')
for (const [kind, values] of Object.entries(latencies)) {
  console.log(
    `${kind.padEnd(8)} ${String(values.length).padStart(5)} ${pct(values, 0.5).toFixed(1).padStart(8)} ${pct(values, 0.99).toFixed(1).padStart(8)} ${pct(values, 1).toFixed(1).padStart(8)}`,
  )
}
clientLoop.disable()
console.log(`the soak's own event loop: delay p99 ${(clientLoop.percentile(99) / 1e6).toFixed(1)} ms, max ${(clientLoop.max / 1e6).toFixed(0)} ms`)
console.log(`answers: ${[...statuses].map(([key, n]) => `${key}: ${n}`).join(', ')}`)
console.log(
  `events: ${events.n}; deliveries: ${[...byOutcome].map(([status, n]) => `${status} ${n}`).join(', ')}; receiver attempts ${attempts}, distinct deliveries received ${delivered.size}; lost ${lost.length}`,
)
console.log(`daemon RSS MB every 5 s: ${rss.map((sample) => sample.mb.toFixed(0)).join(' ')}`)
console.log(`live heap MB after the latest full collection, every 5 s: ${afterGc.map((sample) => sample.heapMb.toFixed(0)).join(' ')}`)

// Growth after warm-up (the first third), the second half of the rest against the first.
// RSS swings by a quarter with the collector and the allocator; what a leak raises is the floor
// it returns to, so RSS is compared by the lowest sample of each half. The live heap after a full
// collection does not swing, so it is compared by the median of each half.
const halves = <T extends {atS: number}>(samples: T[]): [T[], T[]] => {
  const warm = samples.filter((sample) => sample.atS >= seconds / 3)
  return [warm.slice(0, Math.ceil(warm.length / 2)), warm.slice(Math.ceil(warm.length / 2))]
}
const lowest = (values: number[]) => (values.length === 0 ? 0 : Math.min(...values))
const middle = (values: number[]) => (values.length === 0 ? 0 : [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!)
const growthOf = (before: number, after: number) => (before === 0 ? 0 : (after - before) / before)
const [rssFirst, rssSecond] = halves(rss).map((half) => half.map((sample) => sample.mb)) as [number[], number[]]
// A live-heap sample counts once a full collection came after the warm-up's last sample: until
// then the gauge repeats a reading from the warm-up, taken while the daemon's caches still filled.
// With an odd count the middle sample is in both halves, so one collection still compares.
const warmUpCollections = Math.max(0, ...afterGc.filter((sample) => sample.atS < seconds / 3).map((sample) => sample.collections))
const heapAfterWarmUp = afterGc.filter((sample) => sample.collections > warmUpCollections).map((sample) => sample.heapMb)
const heapFirst = heapAfterWarmUp.slice(0, Math.ceil(heapAfterWarmUp.length / 2))
const heapSecond = heapAfterWarmUp.slice(Math.floor(heapAfterWarmUp.length / 2))
const rssGrowth = growthOf(lowest(rssFirst), lowest(rssSecond))
const heapGrowth = growthOf(middle(heapFirst), middle(heapSecond))
console.log(
  `RSS after warm-up (lowest of each half): ${lowest(rssFirst).toFixed(0)} MB, then ${lowest(rssSecond).toFixed(0)} MB: ${(rssGrowth * 100).toFixed(1)}% (limit ${RSS_GROWTH_LIMIT * 100}%); medians ${middle(rssFirst).toFixed(0)} and ${middle(rssSecond).toFixed(0)} MB`,
)
console.log(
  `live heap after a full collection (median of each half of the ${heapAfterWarmUp.length} samples from collections after warm-up): ${middle(heapFirst).toFixed(1)} MB, then ${middle(heapSecond).toFixed(1)} MB: ${(heapGrowth * 100).toFixed(1)}% (limit ${RSS_GROWTH_LIMIT * 100}%)`,
)

const unexpected5xx = [...statuses].filter(([key]) => /\s5\d\d$/.test(key)).reduce((sum, [, n]) => sum + n, 0)
const failures = [
  ...(lost.length > 0 ? [`${lost.length} events not delivered`] : []),
  ...(Number(events.n) !== deliveries.length ? [`${events.n} events but ${deliveries.length} deliveries`] : []),
  ...(unexpected5xx > 0 ? [`${unexpected5xx} unexpected 5xx`] : []),
  ...(rssGrowth > RSS_GROWTH_LIMIT ? [`RSS grew ${(rssGrowth * 100).toFixed(1)}% after warm-up`] : []),
  ...(heapGrowth > RSS_GROWTH_LIMIT ? [`the live heap grew ${(heapGrowth * 100).toFixed(1)}% after warm-up`] : []),
  ...(heapAfterWarmUp.length === 0 ? ['no full collection observed after warm-up'] : []),
]
console.log(failures.length === 0 ? 'soak: ok' : `soak: FAILED: ${failures.join('; ')}`)
process.exit(failures.length === 0 ? 0 : 1)
