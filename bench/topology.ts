/**
 * Capacity past one machine, measured on this one: single creates through HAProxy to one and to
 * three `--role api` daemons, then with webhooks on and two `--role worker` daemons delivering,
 * then one and two workers draining a backlog. Every daemon is its own process; MariaDB, Redis,
 * HAProxy, the load client and the HTTPS receiver share the machine's cores with them. Prints
 * creates/s (per daemon from HAProxy's counts) and deliveries/s beside the floor measured in the
 * same run (the two-insert transaction straight through mysql2 at the same concurrency), and the
 * CPU seconds each part used: what is shared.
 *
 * Run: npm run bench:topology (LEADS_BENCH_MYSQL_URL names the server, default
 * mysql://root@127.0.0.1:3306; a database and a redis-server of its own, both removed at the end).
 */
import fs from 'node:fs'
import https from 'node:https'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'

import mysql from 'mysql2/promise'

import {loadConfig} from '../src/config/config.js'
import {createServices} from '../src/services.js'
import {type Balancer, startHaproxy} from '../test/helpers/haproxy.js'
import {freePort, killRedis, startRedis} from '../test/helpers/local-servers.js'
import {type DaemonProcess, ROOT, spawnDaemon} from './daemon-process.js'
import {LoadConnection} from './http-load.js'
import {measureFloor, median, p99} from './push-floor.js'

const MYSQL = process.env['LEADS_BENCH_MYSQL_URL'] ?? 'mysql://root@127.0.0.1:3306'
const CREATES = 4000
const CONCURRENCY = 32
const BACKLOG = 4000

const watchdog = setTimeout(() => {
  console.log('topology bench: did not finish in 10 minutes')
  process.exit(1)
}, 600_000)
watchdog.unref()

// The receiver answers 200 at once and counts what arrived.
const tls = path.join(ROOT, 'test/fixtures/tls')
let received = 0
const receiver = https.createServer(
  {key: fs.readFileSync(path.join(tls, 'server-key.pem')), cert: fs.readFileSync(path.join(tls, 'server-cert.pem'))},
  (request, response) => {
    request.resume()
    request.on('end', () => {
      received++
      response.writeHead(200).end('ok')
    })
  },
)
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))

const database = `leads_topology_bench_${process.pid}`
const admin = await mysql.createConnection({uri: MYSQL})
await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4`)
const databaseUrl = `${MYSQL}/${database}`
const redisPort = await freePort()
const redis = await startRedis(redisPort)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-topology-bench-'))
const env = {
  LEADS_DATABASE_URL: databaseUrl,
  LEADS_REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
  LEADS_MASTER_KEY: 'cd'.repeat(32),
  LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
  LEADS_TRUSTED_PROXIES: '127.0.0.1',
  NODE_EXTRA_CA_CERTS: path.join(tls, 'ca.pem'),
}
const services = await createServices(loadConfig(env), {autoMigrate: true})
const customer = await services.customers.create({name: 'Capacity Realty'})
await services.rateLimits.set({type: 'customer', id: customer.id}, {perMinute: 1_000_000, perHour: 1_000_000})
const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}
const db = await mysql.createConnection({uri: databaseUrl})

/** CPU seconds a process has used (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime, in clock ticks of 1/100 s.
  return (Number(fields[11]) + Number(fields[12])) / 100
}
const pidOf = (name: string) =>
  fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .find((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name
      } catch {
        return false
      }
    })
const mariadbPid = pidOf('mariadbd') ?? pidOf('mysqld')

interface Parts {
  apis: DaemonProcess[]
  workers: DaemonProcess[]
  balancer: Balancer | null
}

/** CPU seconds of every part over `work`; `parts` is asked again afterwards, for processes `work` started. */
async function cpuOver(parts: () => Parts, work: () => Promise<void>): Promise<string> {
  const processes = (of: Parts): Array<[string, number | undefined]> => [
    ...of.apis.map((api, i): [string, number | undefined] => [`api${i}`, api.child.pid]),
    ...of.workers.map((worker, i): [string, number | undefined] => [`worker${i}`, worker.child.pid]),
    ['mariadb', mariadbPid],
    ['redis', redis.pid],
    ['haproxy', of.balancer ? pidOf('haproxy') : undefined],
  ]
  const before = new Map(processes(parts()).map(([, pid]) => [pid, pid ? cpuSeconds(pid) : 0]))
  const self = process.cpuUsage()
  await work()
  const used = processes(parts()).map(([name, pid]) => `${name} ${(pid ? cpuSeconds(pid) - (before.get(pid) ?? 0) : 0).toFixed(1)}`)
  const mine = process.cpuUsage(self)
  return [...used, `client+receiver ${((mine.user + mine.system) / 1e6).toFixed(1)}`].join(', ')
}

let people = 0
/** CREATES single creates from CONCURRENCY keep-alive connections; creates/s and latency percentiles. */
async function creates(url: string): Promise<{perSecond: number; medianMs: number; p99Ms: number}> {
  const connections = await Promise.all(Array.from({length: CONCURRENCY}, () => LoadConnection.open(url)))
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    connections.map(async (connection) => {
      while (next < CREATES) {
        next++
        const i = people++
        const t0 = performance.now()
        const response = await connection.post(
          '/api/agents/crm/leads',
          headers,
          JSON.stringify({contact_name: `Capacity ${i}`, contact_email: `capacity${i}@example.org`}),
        )
        if (response.status !== 201) throw new Error(`create: ${response.status} ${response.text.slice(0, 200)}`)
        latencies.push(performance.now() - t0)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  for (const connection of connections) connection.close()
  return {perSecond: CREATES / seconds, medianMs: median(latencies), p99Ms: p99(latencies)}
}

async function undelivered(): Promise<number> {
  const [[row]] = (await db.query(`SELECT COUNT(*) AS n FROM deliveries WHERE customer_id = ? AND status <> 'succeeded'`, [customer.id])) as unknown as [
    [{n: number}],
  ]
  return Number(row.n)
}

async function drained(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while ((await undelivered()) > 0) {
    if (Date.now() > deadline) throw new Error('deliveries did not drain in time')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const apiEnv = {...env, LEADS_LOG_LEVEL: 'warn'}
const apiPorts = [await freePort(), await freePort(), await freePort()]
const apis = await Promise.all(apiPorts.map((port) => spawnDaemon(apiEnv, 'api', port)))
const rows: string[][] = []
const cpu: string[] = []
let floorRate = 0

try {
  const floor = await measureFloor(databaseUrl, 'service', 200, CREATES, CONCURRENCY)
  floorRate = floor.concurrentPerSecond
  rows.push(['floor: two-insert transactions through mysql2', String(CONCURRENCY), floor.concurrentPerSecond.toFixed(0), '', '', ''])

  for (const count of [1, 3]) {
    const balancer = await startHaproxy(dir, apiPorts.slice(0, count))
    const before = await balancer.stats()
    let figures = {perSecond: 0, medianMs: 0, p99Ms: 0}
    cpu.push(
      `creates, ${count} API daemon(s): ${await cpuOver(
        () => ({apis: apis.slice(0, count), workers: [], balancer}),
        async () => void (figures = await creates(balancer.url)),
      )}`,
    )
    const served = (await balancer.stats()).map((server, i) => server.requests - before[i]!.requests)
    rows.push([
      `creates via HAProxy, ${count} API daemon(s), no webhook`,
      String(CONCURRENCY),
      figures.perSecond.toFixed(0),
      (figures.perSecond / count).toFixed(0),
      `${figures.medianMs.toFixed(1)} / ${figures.p99Ms.toFixed(1)}`,
      `served ${served.join(' / ')}`,
    ])
    await balancer.stop()
  }

  // Webhooks on: every create owes a delivery, sent by two workers while the creates go on.
  await services.webhooks.create(customer.id, {
    url: `https://localhost:${(receiver.address() as AddressInfo).port}/hooks`,
    event_types: ['lead.created'],
    timeout_seconds: 5,
  })
  const workerEnv = {...env, LEADS_LOG_LEVEL: 'warn'}
  let workers: DaemonProcess[] = await Promise.all([spawnDaemon(workerEnv, 'worker'), spawnDaemon(workerEnv, 'worker')])
  {
    const balancer = await startHaproxy(dir, apiPorts)
    received = 0
    let figures = {perSecond: 0, medianMs: 0, p99Ms: 0}
    let drainSeconds = 0
    cpu.push(
      `creates with webhooks, 3 API daemons + 2 workers: ${await cpuOver(
        () => ({apis, workers, balancer}),
        async () => {
          figures = await creates(balancer.url)
          const started = performance.now()
          await drained(120_000)
          drainSeconds = (performance.now() - started) / 1000
        },
      )}`,
    )
    rows.push([
      'creates via HAProxy, 3 API daemons, webhooks on, 2 workers',
      String(CONCURRENCY),
      figures.perSecond.toFixed(0),
      (figures.perSecond / 3).toFixed(0),
      `${figures.medianMs.toFixed(1)} / ${figures.p99Ms.toFixed(1)}`,
      `${received} delivered meanwhile, the rest ${drainSeconds.toFixed(1)} s after`,
    ])
    await balancer.stop()
  }

  // A backlog written with no worker running, then drained by one worker, then by two.
  for (const count of [1, 2]) {
    await Promise.all(workers.map((worker) => worker.stop()))
    const balancer = await startHaproxy(dir, apiPorts)
    await creates(balancer.url)
    await balancer.stop()
    const backlog = await undelivered()
    if (backlog < BACKLOG) throw new Error(`expected a backlog of ${BACKLOG}, have ${backlog}`)
    let seconds = 0
    workers = []
    cpu.push(
      `backlog drained by ${count} worker(s): ${await cpuOver(
        () => ({apis: [], workers, balancer: null}),
        async () => {
          const started = performance.now()
          workers = await Promise.all(Array.from({length: count}, () => spawnDaemon(workerEnv, 'worker')))
          await drained(120_000)
          seconds = (performance.now() - started) / 1000
        },
      )}`,
    )
    rows.push([
      `backlog of ${backlog} drained by ${count} worker(s) (start-up included)`,
      '',
      '',
      '',
      '',
      `${(backlog / seconds).toFixed(0)} deliveries/s, ${(backlog / seconds / count).toFixed(0)} per worker`,
    ])
  }
  await Promise.all(workers.map((worker) => worker.stop()))
} finally {
  await Promise.all(apis.map((api) => api.stop()))
  await services.close()
  await db.end()
  await admin.query(`DROP DATABASE \`${database}\``)
  await admin.end()
  await killRedis(redis)
  receiver.close()
  fs.rmSync(dir, {recursive: true, force: true})
}

console.log(
  `Topology capacity on this machine (${os.cpus().length} cores, everything on it): ${CREATES} creates per measure from ${CONCURRENCY} keep-alive connections`,
)
console.log('measure | concurrency | creates/s | per API daemon | p50 / p99 ms | notes')
for (const row of rows) console.log(row.join(' | '))
console.log(
  `API creates against the floor: ${rows
    .slice(1, 4)
    .map((row) => `${row[0]!.split(',').slice(1).join(',').trim()}: ${((Number(row[2]) / floorRate) * 100).toFixed(0)}%`)
    .join('; ')}`,
)
console.log('CPU seconds by part:')
for (const line of cpu) console.log(`  ${line}`)
