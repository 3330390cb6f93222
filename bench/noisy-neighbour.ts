/**
 * Noisy neighbour: do two customers whose receivers hang starve everyone else's
 * webhooks? On MariaDB + Redis, an API daemon process and `leads daemon --role worker` processes
 * (one run with each worker count in LEADS_BENCH_WORKERS, default "1,2"), ten customers with one
 * webhook each (default settings: timeout 10 s, 5 retries), each on its own HTTPS receiver on
 * loopback:
 * 1. hold: the two dead customers' receivers accept TCP and TLS but never answer; each dead
 *    customer gets a backlog of 1,500 single creates (16 at once);
 * 2. healthy: the eight others create 20 leads/s each for 30 s, paced; their receivers answer 200
 *    at once. Measured: a create's 201 to its lead's first arrival (bars: median < 50 ms, p99 < 1 s);
 * 3. recovery: the dead receivers start answering 200 (the requests hanging then too). Measured:
 *    until every dead customer's delivery has been answered 200 (bar: all of them, about 15 s),
 *    and how many ended `failed` in the database (bar: none).
 * Every wait is bounded: what did not come in time is reported missing. Then the floor (a bare
 * keep-alive HTTPS client) and the host's steal. Results go to bench/results/ as JSON.
 *
 * Each run starts from a flushed Redis db and fresh customers, and deletes its webhooks at the end
 * (which cancels their unfinished deliveries), so runs do not mix; unfinished deliveries an
 * aborted earlier run left in the bench database are cancelled the same way before the first run.
 * Run: LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench LEADS_BENCH_REDIS_URL=redis://127.0.0.1:6379/13 npm run bench:noisy-neighbour
 * The Redis db is flushed: give the bench one nothing else uses. For a short try:
 * LEADS_BENCH_WORKERS=1 LEADS_BENCH_BACKLOG=100 LEADS_BENCH_SECONDS=5 (defaults 1,2 and 1500 and 30).
 */
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {createClient} from 'redis'

import {loadConfig} from '../src/config/config.js'
import {createDb, type Db} from '../src/db/knex.js'
import {createServices, type Services} from '../src/services.js'
import {type DaemonProcess, ROOT, spawnDaemon} from './daemon-process.js'
import {cpuTimes, stealReport} from './host-steal.js'
import {databasePid, findProcess, meterCpu, type CpuShares} from './process-cpu.js'
import {barePost} from './bare-post.js'
import {checkoutCommit, writeResults} from './results-file.js'

const HEALTHY_CUSTOMERS = 8
const DEAD_CUSTOMERS = 2
const BACKLOG_PER_DEAD = Number(process.env['LEADS_BENCH_BACKLOG'] ?? 1500)
const BACKLOG_CONCURRENCY = 16
const CREATES_PER_SECOND = 20
const HEALTHY_SECONDS = Number(process.env['LEADS_BENCH_SECONDS'] ?? 30)
/** After the last healthy create, how long its deliveries may still take before they count as missing. */
const HEALTHY_GRACE_MS = 10_000
/** How long the recovery phase waits for every dead customer's delivery before it reports what is missing. */
const RECOVERY_LIMIT_MS = 120_000
/** How long a stopping process may take before it is killed (a worker finishes its attempts in flight first). */
const STOP_LIMIT_MS = 20_000
const FLOOR_POSTS = 10_000
const MASTER_KEY = 'cd'.repeat(32)

const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
if (!mysqlUrl || !redisUrl) throw new Error('set LEADS_BENCH_MYSQL_URL and LEADS_BENCH_REDIS_URL')
const workerCounts = (process.env['LEADS_BENCH_WORKERS'] ?? '1,2').split(',').map((value) => {
  const count = Number(value.trim())
  if (!Number.isInteger(count) || count < 1) throw new Error(`LEADS_BENCH_WORKERS: "${value}" is not a worker count (e.g. 1,2)`)
  return count
})
const env = {
  LEADS_DATABASE_URL: mysqlUrl,
  LEADS_REDIS_URL: redisUrl,
  LEADS_MASTER_KEY: MASTER_KEY,
  LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
  LEADS_LOG_LEVEL: 'silent',
}

const tls = path.join(ROOT, 'test/fixtures/tls')
const tlsOptions = {key: fs.readFileSync(path.join(tls, 'server-key.pem')), cert: fs.readFileSync(path.join(tls, 'server-cert.pem'))}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits

/** Percentile of a list where Infinity stands for "never arrived": null when the percentile falls on one. */
function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null
  const value = [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!
  return Number.isFinite(value) ? round(value) : null
}
function summary(values: number[]): {median_ms: number | null; p99_ms: number | null; max_ms: number | null} {
  return {median_ms: percentile(values, 0.5), p99_ms: percentile(values, 0.99), max_ms: percentile(values, 1)}
}

/** The machine's busy share of all cores between two readings of /proc/stat (null off Linux). */
function busyTimes(): {busy: number; total: number} | null {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number)
    const total = fields.reduce((sum, value) => sum + value, 0)
    return {busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total}
  } catch {
    return null
  }
}
function machineLoad(before: ReturnType<typeof busyTimes>, after: ReturnType<typeof busyTimes>, shares: CpuShares) {
  const cores = os.cpus().length
  const busyPercent = before && after && after.total > before.total ? (100 * cores * (after.busy - before.busy)) / (after.total - before.total) : null
  const processes = Object.fromEntries(shares.processes.map(({name, cpuMs}) => [name, cpuMs === null ? null : round((100 * cpuMs) / shares.wallMs, 0)]))
  const ours = Object.values(processes).reduce<number>((sum, value) => sum + (value ?? 0), 0)
  // In % of one core: the whole machine, this bench's processes, and the rest (other work on the host).
  return {
    cores,
    machine_busy_percent: busyPercent === null ? null : round(busyPercent, 0),
    processes_percent: processes,
    others_percent: busyPercent === null ? null : round(busyPercent - ours, 0),
  }
}

// ---- HTTP to the API daemon ----
const apiAgent = new http.Agent({keepAlive: true, maxSockets: 64})
function post(url: string, headers: Record<string, string>, body: unknown): Promise<{status: number; text: string}> {
  const payload = JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {method: 'POST', agent: apiAgent, headers: {...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload)}},
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () => resolve({status: response.statusCode ?? 0, text}))
      },
    )
    request.on('error', reject)
    request.end(payload)
  })
}

// ---- Receivers ----
interface Receiver {
  url: string
  server: https.Server
  close(): void
}
function listen(server: https.Server): Promise<Receiver> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `https://localhost:${(server.address() as AddressInfo).port}/hook`,
        server,
        close() {
          server.close()
          server.closeAllConnections()
        },
      }),
    ),
  )
}
function readBody(request: http.IncomingMessage, then: (leadId: string) => void): void {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => then((JSON.parse(Buffer.concat(chunks).toString()) as {lead: {id: string}}).lead.id))
}

/** Answers 200 at once; records each lead's first arrival. */
function healthyReceiver(arrivals: Map<string, number>, counts: {requests: number}): Promise<Receiver> {
  return listen(
    https.createServer(tlsOptions, (request, response) => {
      readBody(request, (leadId) => {
        const at = performance.now()
        counts.requests++
        if (!arrivals.has(leadId)) arrivals.set(leadId, at)
        response.writeHead(200).end('ok')
      })
    }),
  )
}

interface DeadState {
  recovered: boolean
  /** Attempts that arrived while it hung, and the distinct deliveries among them. */
  heldAttempts: number
  heldDeliveries: Set<string>
  /** Each delivery's first 200 that left on a live socket (performance.now()). */
  reached: Map<string, number>
  hanging: Set<{deliveryId: string; response: http.ServerResponse}>
  recover(): void
}
/** Accepts connections and requests but never answers until recover(); then answers 200, the hanging requests too. */
async function deadReceiver(): Promise<{receiver: Receiver; state: DeadState}> {
  const answer = (deliveryId: string, response: http.ServerResponse) => {
    if (response.destroyed || response.writableEnded) return
    response.once('finish', () => {
      if (!state.reached.has(deliveryId)) state.reached.set(deliveryId, performance.now())
    })
    response.writeHead(200).end('ok')
  }
  const state: DeadState = {
    recovered: false,
    heldAttempts: 0,
    heldDeliveries: new Set(),
    reached: new Map(),
    hanging: new Set(),
    recover() {
      state.recovered = true
      for (const {deliveryId, response} of state.hanging) answer(deliveryId, response)
      state.hanging.clear()
    },
  }
  const receiver = await listen(
    https.createServer(tlsOptions, (request, response) => {
      const deliveryId = String(request.headers['x-service-delivery'])
      readBody(request, () => {
        if (state.recovered) return answer(deliveryId, response)
        state.heldAttempts++
        state.heldDeliveries.add(deliveryId)
        const entry = {deliveryId, response}
        state.hanging.add(entry)
        response.once('close', () => state.hanging.delete(entry))
      })
    }),
  )
  return {receiver, state}
}

// ---- One run ----
interface Tenant {
  customerId: string
  webhookId: string
  headers: Record<string, string>
}
async function newTenant(services: Services, name: string, url: string): Promise<Tenant> {
  const customer = await services.customers.create({name})
  const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
  const {webhook} = await services.webhooks.create(customer.id, {url, event_types: ['lead.created']})
  return {customerId: customer.id, webhookId: webhook.id, headers: {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}}
}

async function statusCounts(db: Db, customerId: string): Promise<Record<string, number>> {
  const rows = (await db('deliveries').where({customer_id: customerId}).groupBy('status').select('status').count({n: '*'})) as Array<{
    status: string
    n: number | string
  }>
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]))
}

async function stopBounded(processes: DaemonProcess[]): Promise<void> {
  await Promise.all(
    processes.map(async (daemon) => {
      const timer = setTimeout(() => daemon.child.kill('SIGKILL'), STOP_LIMIT_MS)
      await daemon.stop()
      clearTimeout(timer)
    }),
  )
}

async function flushRedis(): Promise<void> {
  const client = createClient({url: redisUrl})
  await client.connect()
  await client.flushDb()
  await client.quit()
}

/** Cancels what earlier runs left unfinished (an aborted run): deletes the webhooks that still have pending or delivering deliveries. */
async function cancelLeftovers(services: Services, db: Db): Promise<number> {
  const rows = (await db('deliveries').whereIn('status', ['pending', 'delivering']).distinct('customer_id', 'webhook_id')) as Array<{
    customer_id: string
    webhook_id: string
  }>
  for (const row of rows) await services.webhooks.delete(row.customer_id, row.webhook_id).catch(() => undefined)
  return rows.length
}

async function run(services: Services, workers: number, runIndex: number) {
  await flushRedis()
  const cpuStart = cpuTimes()
  const label = `bench noisy neighbour ${new Date().toISOString()} w${workers}`

  const arrivals = new Map<string, number>()
  const healthyCounts = {requests: 0}
  const healthyReceivers = await Promise.all(Array.from({length: HEALTHY_CUSTOMERS}, () => healthyReceiver(arrivals, healthyCounts)))
  const dead = await Promise.all(Array.from({length: DEAD_CUSTOMERS}, () => deadReceiver()))
  const healthy = await Promise.all(healthyReceivers.map((receiver, i) => newTenant(services, `${label} healthy ${i}`, receiver.url)))
  const deadTenants = await Promise.all(dead.map(({receiver}, i) => newTenant(services, `${label} dead ${i}`, receiver.url)))

  const api = await spawnDaemon(env, 'api')
  const workerProcesses: DaemonProcess[] = []
  for (let i = 0; i < workers; i++) workerProcesses.push(await spawnDaemon(env, 'worker'))
  const cpuPids = {
    bench: process.pid,
    api: api.child.pid,
    ...Object.fromEntries(workerProcesses.map((worker, i) => [`worker${i + 1}`, worker.child.pid])),
    mariadbd: databasePid(),
    'redis-server': findProcess(['redis-server']),
  }
  const holdMeter = meterCpu(cpuPids)
  const busyStart = busyTimes()

  // 1. The dead customers' backlogs.
  let createErrors = 0
  const backlogStarted = performance.now()
  let next = 0
  await Promise.all(
    Array.from({length: BACKLOG_CONCURRENCY}, async () => {
      while (next < BACKLOG_PER_DEAD * DEAD_CUSTOMERS) {
        const i = next++
        const tenant = deadTenants[i % DEAD_CUSTOMERS]!
        const response = await post(`${api.url}/api/agents/crm/leads`, tenant.headers, {contact_email: `backlog-${runIndex}-${i}@example.org`}).catch(() => ({
          status: 0,
          text: '',
        }))
        if (response.status !== 201) createErrors++
      }
    }),
  )
  const backlogSeconds = (performance.now() - backlogStarted) / 1000

  // 2. The healthy customers, paced: create i of customer c is due at i / rate, offset by c / (rate * customers).
  const creates: Array<{leadId: string; answeredAt: number; customer: number}> = []
  const createMs: number[] = []
  let lateStarts = 0
  const schedule: Array<{at: number; customer: number; i: number}> = []
  const perCustomer = CREATES_PER_SECOND * HEALTHY_SECONDS
  for (let c = 0; c < HEALTHY_CUSTOMERS; c++)
    for (let i = 0; i < perCustomer; i++) schedule.push({at: (1000 * (i + c / HEALTHY_CUSTOMERS)) / CREATES_PER_SECOND, customer: c, i})
  schedule.sort((a, b) => a.at - b.at)
  const pending: Array<Promise<void>> = []
  const healthyStarted = performance.now()
  for (const item of schedule) {
    const wait = healthyStarted + item.at - performance.now()
    if (wait > 0) await sleep(wait)
    else if (wait < -50) lateStarts++
    const tenant = healthy[item.customer]!
    const sentAt = performance.now()
    pending.push(
      post(`${api.url}/api/agents/crm/leads`, tenant.headers, {contact_email: `healthy-${runIndex}-${item.customer}-${item.i}@example.org`}).then(
        (response) => {
          const answeredAt = performance.now()
          if (response.status !== 201) return void createErrors++
          createMs.push(answeredAt - sentAt)
          creates.push({leadId: (JSON.parse(response.text) as {lead: {id: string}}).lead.id, answeredAt, customer: item.customer})
        },
        () => void createErrors++,
      ),
    )
  }
  await Promise.all(pending)
  const healthySeconds = (performance.now() - healthyStarted) / 1000
  const graceEnds = performance.now() + HEALTHY_GRACE_MS
  while (performance.now() < graceEnds && creates.some(({leadId}) => !arrivals.has(leadId))) await sleep(50)
  const cutoff = performance.now()
  const latencies = creates.map(({leadId, answeredAt}) => {
    const at = arrivals.get(leadId)
    return at !== undefined && at <= cutoff ? at - answeredAt : Infinity
  })
  const receivedInPhase = latencies.filter(Number.isFinite).length
  const perHealthyCustomer = healthy.map((_, c) => {
    const mine = creates.flatMap((create, i) => (create.customer === c ? [latencies[i]!] : []))
    return {created: mine.length, received: mine.filter(Number.isFinite).length, ...summary(mine)}
  })
  const holdShares = holdMeter.stop()

  // 3. Recovery.
  const statusAtRecovery = await Promise.all(deadTenants.map((tenant) => statusCounts(db, tenant.customerId)))
  const heldAttempts = dead.map(({state}) => ({
    attempts: state.heldAttempts,
    distinct_deliveries: state.heldDeliveries.size,
    hanging_at_recovery: state.hanging.size,
  }))
  const recoveryMeter = meterCpu(cpuPids)
  const busyAtRecovery = busyTimes()
  const recoveredAt = performance.now()
  for (const {state} of dead) state.recover()
  const reachedAll = () => dead.every(({state}) => state.reached.size >= BACKLOG_PER_DEAD)
  // The healthy customers' deliveries still queued drain too: waited for in the same bound, so none is left unaccounted.
  const healthyAll = () => creates.every(({leadId}) => arrivals.has(leadId))
  let healthyDrainedMs: number | null = null
  while (!(reachedAll() && healthyAll()) && performance.now() - recoveredAt < RECOVERY_LIMIT_MS) {
    await sleep(50)
    if (healthyDrainedMs === null && healthyAll()) healthyDrainedMs = performance.now() - recoveredAt
  }
  if (healthyDrainedMs === null && healthyAll()) healthyDrainedMs = performance.now() - recoveredAt
  const recoveryShares = recoveryMeter.stop()
  const busyAfterRecovery = busyTimes()
  const reachedTimes = dead.flatMap(({state}) => [...state.reached.values()].map((at) => at - recoveredAt)).sort((a, b) => a - b)
  const reachedTotal = reachedTimes.length
  const lastReachMs = reachedTimes.at(-1) ?? null
  const within = (share: number) =>
    reachedTotal >= Math.ceil(share * BACKLOG_PER_DEAD * DEAD_CUSTOMERS)
      ? round(reachedTimes[Math.ceil(share * BACKLOG_PER_DEAD * DEAD_CUSTOMERS) - 1]! / 1000, 2)
      : null
  const statusAtEnd = await Promise.all(deadTenants.map((tenant) => statusCounts(db, tenant.customerId)))
  const healthyStatusAtEnd = await Promise.all(healthy.map((tenant) => statusCounts(db, tenant.customerId)))
  const healthyReceivedByEnd = creates.filter(({leadId}) => arrivals.has(leadId)).length

  await stopBounded(workerProcesses)
  await stopBounded([api])
  for (const tenant of [...healthy, ...deadTenants]) await services.webhooks.delete(tenant.customerId, tenant.webhookId)
  for (const receiver of [...healthyReceivers, ...dead.map(({receiver}) => receiver)]) receiver.close()

  return {
    workers,
    backlog: {
      per_dead_customer: BACKLOG_PER_DEAD,
      seconds: round(backlogSeconds, 2),
      creates_per_second: round((BACKLOG_PER_DEAD * DEAD_CUSTOMERS) / backlogSeconds, 0),
    },
    healthy: {
      customers: HEALTHY_CUSTOMERS,
      creates_per_second_each: CREATES_PER_SECOND,
      seconds: round(healthySeconds, 2),
      created: creates.length,
      create_errors: createErrors,
      creates_started_over_50ms_late: lateStarts,
      create_to_201: summary(createMs),
      // Over every create: a delivery that had not arrived by the cut-off (grace after the last create) counts as never.
      create_201_to_first_receipt: summary(latencies),
      received_by_cutoff: receivedInPhase,
      received_share: creates.length ? round(receivedInPhase / creates.length, 4) : null,
      grace_after_last_create_ms: HEALTHY_GRACE_MS,
      received_by_end_of_run: healthyReceivedByEnd,
      // From the dead receivers' recovery until every healthy create's delivery had arrived (null: not within the recovery limit).
      seconds_from_recovery_to_all_received: healthyDrainedMs === null ? null : round(healthyDrainedMs / 1000, 2),
      requests_at_receivers: healthyCounts.requests,
      per_customer: perHealthyCustomer,
      status_at_end_of_run: healthyStatusAtEnd,
    },
    hold: {
      seconds: round((recoveredAt - backlogStarted) / 1000, 1),
      per_dead_customer: heldAttempts,
      status_at_recovery: statusAtRecovery,
      failed_at_recovery: statusAtRecovery.reduce((sum, counts) => sum + (counts['failed'] ?? 0), 0),
      load: machineLoad(busyStart, busyAtRecovery, holdShares),
    },
    recovery: {
      limit_s: RECOVERY_LIMIT_MS / 1000,
      expected: BACKLOG_PER_DEAD * DEAD_CUSTOMERS,
      reached: reachedTotal,
      reached_per_dead_customer: dead.map(({state}) => state.reached.size),
      all_reached: reachedAll(),
      seconds_to_50_percent: within(0.5),
      seconds_to_90_percent: within(0.9),
      seconds_to_all: within(1),
      seconds_to_last_reached: lastReachMs === null ? null : round(lastReachMs / 1000, 2),
      deliveries_per_second: lastReachMs ? round((1000 * reachedTotal) / lastReachMs, 0) : null,
      status_at_end: statusAtEnd,
      failed: statusAtEnd.reduce((sum, counts) => sum + (counts['failed'] ?? 0), 0),
      load: machineLoad(busyAtRecovery, busyAfterRecovery, recoveryShares),
    },
    steal: stealReport(cpuStart, cpuTimes()),
  }
}

/** The floor: a bare keep-alive HTTPS client posting like-sized bodies to a healthy receiver, 64 at once (the worker's default concurrency). */
async function floor(): Promise<{posts: number; seconds: number; posts_per_second: number}> {
  const receiver = await healthyReceiver(new Map(), {requests: 0})
  const sample = JSON.stringify({type: 'lead.created', lead: {id: '00000000-0000-7000-8000-000000000000', contact_email: 'backlog@example.org'}})
  const agent = new https.Agent({keepAlive: true, maxSockets: 64, ca: fs.readFileSync(path.join(tls, 'ca.pem'))})
  const started = performance.now()
  let sent = 0
  await Promise.all(
    Array.from({length: 64}, async () => {
      while (sent++ < FLOOR_POSTS) {
        await barePost(receiver.url, agent, sample)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  agent.destroy()
  receiver.close()
  return {posts: FLOOR_POSTS, seconds: round(seconds, 2), posts_per_second: round(FLOOR_POSTS / seconds, 0)}
}

// ---- Main ----
const startedAt = new Date()
const cpuAtStart = cpuTimes()
const loadAtStart = os.loadavg()
const config = loadConfig({...env, LEADS_PORT: '0'})
// The bench's own handle, for the delivery rows no service returns; the services run on it too.
const db = createDb(config.database)
const services = await createServices(config, {db, autoMigrate: true, connectRedis: false})
const runs: Array<Awaited<ReturnType<typeof run>>> = []
let leftovers = 0
try {
  leftovers = await cancelLeftovers(services, db)
  for (const [i, workers] of workerCounts.entries()) {
    console.error(`run ${i + 1} of ${workerCounts.length}: ${workers} worker(s)...`)
    runs.push(await run(services, workers, i))
  }
} finally {
  await services.close()
  await db.destroy()
  apiAgent.destroy()
}
const floorResult = await floor()
const steal = stealReport(cpuAtStart, cpuTimes())

const checkout = checkoutCommit()
const result = {
  bench: 'noisy-neighbour',
  started_at: startedAt.toISOString(),
  git_commit: checkout.commit,
  git_dirty: checkout.dirty,
  host: {
    cores: os.cpus().length,
    loadavg_at_start: loadAtStart.map((value) => round(value, 2)),
    loadavg_at_end: os.loadavg().map((value) => round(value, 2)),
    node: process.version,
  },
  settings: {
    database: 'mysql',
    redis: true,
    worker_counts: workerCounts,
    healthy_customers: HEALTHY_CUSTOMERS,
    dead_customers: DEAD_CUSTOMERS,
    backlog_per_dead_customer: BACKLOG_PER_DEAD,
    backlog_concurrency: BACKLOG_CONCURRENCY,
    creates_per_second_per_healthy_customer: CREATES_PER_SECOND,
    healthy_seconds: HEALTHY_SECONDS,
    healthy_grace_ms: HEALTHY_GRACE_MS,
    recovery_limit_ms: RECOVERY_LIMIT_MS,
    webhook: {timeout_seconds: 10, retry_attempts: 5},
    leftover_webhooks_cleaned: leftovers,
  },
  bars: {healthy_median_ms: 50, healthy_p99_ms: 1000, recovery_seconds_to_all: 15, recovery_failed: 0},
  runs,
  floor: floorResult,
  steal,
}
const file = writeResults('noisy-neighbour', startedAt, result)

const ms = (value: number | null) => (value === null ? 'never' : `${value.toFixed(1)} ms`)
const seconds = (value: number | null) => (value === null ? 'not all' : `${value.toFixed(1)} s`)
console.log(
  `Noisy neighbour on MariaDB + Redis: ${DEAD_CUSTOMERS} customers' receivers hang with ${BACKLOG_PER_DEAD} deliveries each; ${HEALTHY_CUSTOMERS} healthy customers create ${CREATES_PER_SECOND}/s each for ${HEALTHY_SECONDS} s`,
)
const rows: string[][] = [['', ...runs.map((r) => `${r.workers} worker${r.workers > 1 ? 's' : ''}`), 'bar']]
const add = (name: string, values: string[], bar = '') => rows.push([name, ...values, bar])
add(
  'dead backlog created',
  runs.map((r) => `${r.backlog.seconds.toFixed(1)} s (${r.backlog.creates_per_second}/s)`),
)
add(
  'healthy: 201 -> first receipt, median',
  runs.map((r) => ms(r.healthy.create_201_to_first_receipt.median_ms)),
  '< 50 ms',
)
add(
  'healthy: p99',
  runs.map((r) => ms(r.healthy.create_201_to_first_receipt.p99_ms)),
  '< 1000 ms',
)
add(
  'healthy: max',
  runs.map((r) => ms(r.healthy.create_201_to_first_receipt.max_ms)),
)
add(
  `healthy: received / created (${HEALTHY_GRACE_MS / 1000} s grace)`,
  runs.map((r) => `${r.healthy.received_by_cutoff} / ${r.healthy.created}`),
  'all',
)
add(
  'healthy: received by end of run',
  runs.map((r) => `${r.healthy.received_by_end_of_run} / ${r.healthy.created}`),
)
add(
  'healthy: all received, after recovery',
  runs.map((r) => seconds(r.healthy.seconds_from_recovery_to_all_received)),
)
add(
  'healthy: create -> 201 median / p99',
  runs.map((r) => `${ms(r.healthy.create_to_201.median_ms)} / ${ms(r.healthy.create_to_201.p99_ms)}`),
)
add(
  'dead: failed when they recover',
  runs.map((r) => String(r.hold.failed_at_recovery)),
  '0',
)
add(
  `dead: reached after recovery (limit ${RECOVERY_LIMIT_MS / 1000} s)`,
  runs.map((r) => `${r.recovery.reached} / ${r.recovery.expected}`),
  'all',
)
add(
  'dead: time to 50% / 90% / all',
  runs.map((r) => `${seconds(r.recovery.seconds_to_50_percent)} / ${seconds(r.recovery.seconds_to_90_percent)} / ${seconds(r.recovery.seconds_to_all)}`),
  'all ~15 s',
)
add(
  'dead: drain rate',
  runs.map((r) => (r.recovery.deliveries_per_second === null ? 'none' : `${r.recovery.deliveries_per_second}/s`)),
)
add(
  'dead: failed at the end',
  runs.map((r) => String(r.recovery.failed)),
  '0',
)
add(
  'machine busy during hold (others)',
  runs.map((r) => `${r.hold.load.machine_busy_percent ?? '?'}% (${r.hold.load.others_percent ?? '?'}%) of ${r.hold.load.cores * 100}%`),
)
add(
  'steal during the run',
  runs.map((r) => r.steal.replace(/^.*: /, '')),
)
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
for (const row of rows) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
console.log(
  `floor: bare keep-alive HTTPS client, ${floorResult.posts} posts to a healthy receiver, 64 at once: ${floorResult.seconds} s, ${floorResult.posts_per_second} posts/s`,
)
console.log(steal)
console.log(`results: ${path.relative(process.cwd(), file)}`)
