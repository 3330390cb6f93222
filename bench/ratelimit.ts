/**
 * What the rate limiter adds to a list request on the Redis backend: the same GET with a
 * limited key (two Redis counters per request) against an internal key (no counting).
 * Run: npm run build && LEADS_BENCH_MYSQL_URL=mysql://... LEADS_BENCH_REDIS_URL=redis://127.0.0.1:6379/14 node dist/bench/ratelimit.js
 */
import http from 'node:http'

import {startDaemon} from '../daemon/server.js'
import {loadConfig} from '../src/config/config.js'
import {createLogger} from '../src/log/logger.js'

const SAMPLES = 3000
const WARMUP = 300

const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
if (!mysqlUrl || !redisUrl) throw new Error('set LEADS_BENCH_MYSQL_URL and LEADS_BENCH_REDIS_URL')

const config = loadConfig({
  LEADS_DATABASE_URL: mysqlUrl,
  LEADS_REDIS_URL: redisUrl,
  LEADS_MASTER_KEY: 'cd'.repeat(32),
  LEADS_PORT: '0',
  LEADS_LOG_LEVEL: 'silent',
})
const daemon = await startDaemon(config, createLogger('silent'), {autoMigrate: true, requireCurrentSchema: false})
const agent = new http.Agent({keepAlive: true, maxSockets: 1})

function get(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    http
      .get(url, {agent, headers}, (response) => {
        response.resume()
        response.on('end', () => {
          if (response.statusCode !== 200) reject(new Error(`status ${response.statusCode}`))
          else resolve(performance.now() - started)
        })
      })
      .on('error', reject)
  })
}

try {
  const customer = await daemon.services.customers.create({name: 'bench ratelimit'})
  const limited = await daemon.services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read']})
  const internal = await daemon.services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read'], internal: true})
  // High enough that the limited key is counted on every request but never refused.
  await daemon.services.rateLimits.set({type: 'key', id: limited.key.id}, {perMinute: 1_000_000, perHour: 1_000_000})
  const url = `${daemon.url}/api/agents/crm/leads?limit=20`
  const headersOf = (token: string) => ({authorization: `Bearer ${token}`, 'x-customer-id': customer.id})
  const samples = {limited: [] as number[], internal: [] as number[]}
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    // Alternate so both see the same machine state.
    const limitedMs = await get(url, headersOf(limited.token))
    const internalMs = await get(url, headersOf(internal.token))
    if (i >= WARMUP) {
      samples.limited.push(limitedMs)
      samples.internal.push(internalMs)
    }
  }
  const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * p)]!
  console.log(`GET /api/agents/crm/leads?limit=20 on MariaDB + Redis, ${SAMPLES} alternating sequential requests per key after ${WARMUP} warm-up`)
  console.log('key        p50 ms  p95 ms')
  console.log(`internal  ${pct(samples.internal, 0.5).toFixed(3).padStart(7)} ${pct(samples.internal, 0.95).toFixed(3).padStart(7)}`)
  console.log(`limited   ${pct(samples.limited, 0.5).toFixed(3).padStart(7)} ${pct(samples.limited, 0.95).toFixed(3).padStart(7)}`)
  const added = pct(samples.limited, 0.5) - pct(samples.internal, 0.5)
  console.log(`added by the limiter at p50: ${added.toFixed(3)} ms (${(pct(samples.limited, 0.5) / pct(samples.internal, 0.5)).toFixed(2)}x); bar < 1 ms`)
} finally {
  agent.destroy()
  await daemon.stop()
}
