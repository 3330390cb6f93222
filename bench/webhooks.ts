/**
 * Webhook delivery on MariaDB + Redis to a local HTTPS receiver that answers 200 at once:
 * (1) latency from a single create's 201 to the first attempt arriving, daemon in role all;
 * (2) throughput of one worker process (`leads daemon --role worker`) draining a backlog.
 * Run: npm run bench:webhooks (needs LEADS_BENCH_MYSQL_URL and LEADS_BENCH_REDIS_URL).
 */
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type {AddressInfo} from 'node:net'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {startDaemon} from '../daemon/server.js'
import {loadConfig} from '../src/config/config.js'
import {createDb} from '../src/db/knex.js'
import {createLogger} from '../src/log/logger.js'
import {cpuTimes, stealReport} from './host-steal.js'
import {barePost} from './bare-post.js'

const LATENCY_SAMPLES = 500
const BACKLOG = 10_000
/** How long the latency phase waits for a create's first attempt before it gives up. */
const ARRIVAL_LIMIT_MS = 10_000
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const MASTER_KEY = 'cd'.repeat(32)

const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
if (!mysqlUrl || !redisUrl) throw new Error('set LEADS_BENCH_MYSQL_URL and LEADS_BENCH_REDIS_URL')
const env = {
  LEADS_DATABASE_URL: mysqlUrl,
  LEADS_REDIS_URL: redisUrl,
  LEADS_MASTER_KEY: MASTER_KEY,
  LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
  LEADS_LOG_LEVEL: 'silent',
}

// The receiver: records when each lead's first delivery arrives, and when the drain's first and last did.
const arrivals = new Map<string, number>()
let received = 0
const drain = {counting: false, first: 0, last: 0}
const tls = path.join(ROOT, 'test/fixtures/tls')
const receiver = https.createServer(
  {key: fs.readFileSync(path.join(tls, 'server-key.pem')), cert: fs.readFileSync(path.join(tls, 'server-cert.pem'))},
  (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const at = performance.now()
      received += 1
      if (drain.counting) {
        drain.first ||= at
        drain.last = at
      }
      const leadId = (JSON.parse(Buffer.concat(chunks).toString()) as {lead: {id: string}}).lead.id
      if (!arrivals.has(leadId)) arrivals.set(leadId, at)
      response.writeHead(200).end('ok')
    })
  },
)
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const hookUrl = `https://localhost:${(receiver.address() as AddressInfo).port}/hook`

const config = loadConfig({...env, LEADS_PORT: '0'})
const agent = new http.Agent({keepAlive: true})
function post(url: string, headers: Record<string, string>, body: unknown): Promise<{status: number; text: string}> {
  const payload = JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {method: 'POST', agent, headers: {...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload)}},
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
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!

// (1) Latency, one daemon doing both roles.
const cpuAtStart = cpuTimes()
const daemon = await startDaemon(config, createLogger('silent'), {autoMigrate: true, requireCurrentSchema: false})
const customer = await daemon.services.customers.create({name: 'bench webhooks'})
const {token} = await daemon.services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
const {webhook} = await daemon.services.webhooks.create(customer.id, {url: hookUrl, event_types: ['lead.created']})
// The worker's ceiling at the bare client's concurrency: the operator's cap for a receiver built
// for volume (`leads webhooks limit --max-in-flight 64`), not the default of 8 a webhook starts with.
await daemon.services.webhooks.setMaxInFlight(webhook.id, 64)
const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}
const latencies: number[] = []
for (let i = 0; i < LATENCY_SAMPLES; i++) {
  const response = await post(`${daemon.url}/api/agents/crm/leads`, headers, {contact_email: `latency-${Date.now()}-${i}@example.org`})
  const answeredAt = performance.now()
  if (response.status !== 201) throw new Error(response.text)
  const leadId = (JSON.parse(response.text) as {lead: {id: string}}).lead.id
  // Polled every turn of the event loop, for sub-millisecond figures; bounded, so a delivery taken
  // elsewhere (another worker on the same Redis and database) ends the run with a reason.
  while (!arrivals.has(leadId)) {
    if (performance.now() - answeredAt > ARRIVAL_LIMIT_MS)
      throw new Error(
        `no attempt for lead ${leadId} within ${ARRIVAL_LIMIT_MS / 1000} s of its 201: is another leads daemon or worker using this database and Redis?`,
      )
    await new Promise((resolve) => setImmediate(resolve))
  }
  latencies.push(arrivals.get(leadId)! - answeredAt)
}
await daemon.stop()

// (2) Throughput: an API-only daemon builds a backlog, then one worker process drains it.
// The bench's own handle, to watch the backlog drain; the API daemon runs on it too.
const db = createDb(config.database)
const api = await startDaemon(config, createLogger('silent'), {role: 'api', requireCurrentSchema: false, db})
const backlogStart = Date.now()
let next = 0
await Promise.all(
  Array.from({length: 16}, async () => {
    while (next < BACKLOG) {
      const i = next++
      const response = await post(`${api.url}/api/agents/crm/leads`, headers, {contact_email: `backlog-${backlogStart}-${i}@example.org`})
      if (response.status !== 201) throw new Error(response.text)
    }
  }),
)
const pendingQuery = () => db('deliveries').where({customer_id: customer.id}).whereIn('status', ['pending', 'delivering']).count({n: '*'})
const receivedBefore = received
drain.counting = true
const started = performance.now()
// LEADS_BENCH_PROFILE=<dir> writes a CPU profile of the worker, as bench/daemon-process.ts does of the daemon.
const profileDir = process.env['LEADS_BENCH_PROFILE']
const nodeArgs = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
const worker = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'bin/run.js'), 'daemon', '--role', 'worker'], {
  env: {...process.env, ...env, LEADS_PORT: '0'},
  stdio: 'inherit',
})
for (;;) {
  const [row] = (await pendingQuery()) as Array<{n: number | string}>
  if (Number(row?.n) === 0) break
  await new Promise((resolve) => setTimeout(resolve, 50))
}
const seconds = (performance.now() - started) / 1000
const delivered = received - receivedBefore
drain.counting = false
const drainSeconds = (drain.last - drain.first) / 1000
worker.kill('SIGTERM')
await new Promise((resolve) => worker.once('exit', resolve))
await api.stop()
await db.destroy()

// The floor: a bare keep-alive HTTPS client posting the same number of like-sized bodies to the
// same receiver, as many at once as the worker sends (its default concurrency, 64).
const sample = JSON.stringify({type: 'lead.created', lead: {id: '00000000-0000-7000-8000-000000000000', contact_email: 'backlog@example.org'}})
const bareAgent = new https.Agent({keepAlive: true, maxSockets: 64, ca: fs.readFileSync(path.join(tls, 'ca.pem'))})
const bareStarted = performance.now()
let bareNext = 0
await Promise.all(
  Array.from({length: 64}, async () => {
    while (bareNext++ < BACKLOG) {
      await barePost(hookUrl, bareAgent, sample)
    }
  }),
)
const bareSeconds = (performance.now() - bareStarted) / 1000
const cpuAtEnd = cpuTimes()
bareAgent.destroy()
receiver.close()
agent.destroy()

console.log('Webhook delivery on MariaDB + Redis to a local HTTPS receiver answering 200 at once')
console.log(`201 -> first attempt arrives (${LATENCY_SAMPLES} sequential creates, daemon role all):`)
console.log(
  `  p50 ${pct(latencies, 0.5).toFixed(1)} ms   p99 ${pct(latencies, 0.99).toFixed(1)} ms   max ${pct(latencies, 1).toFixed(1)} ms   (bars: p50 < 20, p99 < 100)`,
)
console.log(
  `one worker process draining ${BACKLOG} deliveries: ${seconds.toFixed(2)} s from its spawn to an empty queue, ${(delivered / seconds).toFixed(0)} deliveries/s (bar: >= 1000); ${drainSeconds.toFixed(2)} s from the first delivery to the last, ${((delivered - 1) / drainSeconds).toFixed(0)}/s`,
)
console.log(
  `bare keep-alive HTTPS client, ${BACKLOG} posts to the same receiver, 64 at once: ${bareSeconds.toFixed(2)} s, ${(BACKLOG / bareSeconds).toFixed(0)} posts/s; worker/bare ${((100 * delivered) / seconds / (BACKLOG / bareSeconds)).toFixed(0)}%`,
)
console.log(stealReport(cpuAtStart, cpuAtEnd))
