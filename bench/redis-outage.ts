/**
 * Single-create latency for a customer with a webhook while Redis is down, beside the same with
 * Redis up, through the real daemon over loopback HTTP. The bench starts a redis-server of its own
 * on a free loopback port and kills it halfway; it never touches another Redis.
 * Run: LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench npm run bench:redis-outage
 */
import {type ChildProcess, spawn} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {startDaemon} from '../daemon/server.js'
import {loadConfig} from '../src/config/config.js'
import {createLogger} from '../src/log/logger.js'

const CREATES = 500
const MASTER_KEY = 'cd'.repeat(32)
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const tls = path.join(ROOT, 'test/fixtures/tls')

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const {port} = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!

let received = 0
const receiver = https.createServer(
  {key: fs.readFileSync(path.join(tls, 'server-key.pem')), cert: fs.readFileSync(path.join(tls, 'server-cert.pem'))},
  (request, response) => {
    request.resume()
    request.on('end', () => {
      received++
      response.end('ok')
    })
  },
)
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
const receiverPort = (receiver.address() as net.AddressInfo).port

const redisPort = await freePort()
const redis: ChildProcess = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {stdio: 'ignore'})
await sleep(300)

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-bench-'))
const database = process.env['LEADS_BENCH_MYSQL_URL'] ?? `sqlite://${dir}/bench.db`
const config = loadConfig({
  LEADS_MASTER_KEY: MASTER_KEY,
  LEADS_PORT: '0',
  LEADS_LOG_LEVEL: 'silent',
  LEADS_DATABASE_URL: database,
  LEADS_REDIS_URL: `redis://127.0.0.1:${redisPort}`,
  LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
})
const daemon = await startDaemon(config, createLogger('silent'), {autoMigrate: true})
const agent = new http.Agent({keepAlive: true})

function create(headers: Record<string, string>, name: string): Promise<number> {
  const payload = JSON.stringify({contact_name: name, contact_email: `${randomUUID()}@example.org`})
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${daemon.url}/api/agents/crm/leads`,
      {method: 'POST', agent, headers: {...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload)}},
      (response) => {
        response.resume()
        response.on('end', () => (response.statusCode === 201 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${response.statusCode}`))))
      },
    )
    request.on('error', reject)
    request.end(payload)
  })
}

async function phase(headers: Record<string, string>, label: string): Promise<{median: number; p99: number; max: number}> {
  const durations: number[] = []
  for (let i = 0; i < CREATES; i++) durations.push(await create(headers, `${label} ${i}`))
  return {median: percentile(durations, 0.5), p99: percentile(durations, 0.99), max: Math.max(...durations)}
}

try {
  const customer = await daemon.services.customers.create({name: 'bench redis outage'})
  const {token} = await daemon.services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
  await daemon.services.webhooks.create(customer.id, {url: `https://localhost:${receiverPort}/hook`, event_types: ['lead.created']})
  const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}

  const up = await phase(headers, 'up')
  redis.kill('SIGKILL')
  while (daemon.services.redis?.isReady) await sleep(20)
  const down = await phase(headers, 'down')
  const deadline = Date.now() + 30_000
  while (received < 2 * CREATES && Date.now() < deadline) await sleep(50)

  console.log(
    `Single create with a webhook, ${CREATES} sequential creates per phase, ${database.startsWith('mysql') ? 'MariaDB' : 'SQLite'}; Redis killed between the phases`,
  )
  const rows = [
    ['phase', 'median ms', 'p99 ms', 'max ms'],
    ['redis up', ...[up.median, up.p99, up.max].map((v) => v.toFixed(1))],
    ['redis down', ...[down.median, down.p99, down.max].map((v) => v.toFixed(1))],
    ['down / up', `${(down.median / up.median).toFixed(2)}x`, `${(down.p99 / up.p99).toFixed(2)}x`, ''],
  ]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  for (const row of rows) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
  console.log(`deliveries received: ${received} of ${2 * CREATES} (bar: all; goal for p99 while down: under 50 ms)`)
} finally {
  await daemon.stop()
  redis.kill('SIGKILL')
  agent.destroy()
  receiver.close()
  fs.rmSync(dir, {recursive: true, force: true})
}
