/**
 * `leads pull` of 100,000 leads from a local daemon on MariaDB at 100 leads per page: wall time
 * and the CLI's peak RSS (read from /usr/bin/time -v), with 10,000 leads as the memory baseline.
 * Run: npm run build && LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench node dist/bench/pull.js
 */
import {spawn} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {startDaemon} from '../daemon/server.js'
import {loadConfig} from '../src/config/config.js'
import {createDb} from '../src/db/knex.js'
import type {LeadRecord} from '../src/leads/lead-types.js'
import {createLogger} from '../src/log/logger.js'
import {createStores} from '../src/stores.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
if (!mysqlUrl) throw new Error('set LEADS_BENCH_MYSQL_URL')

const config = loadConfig({LEADS_DATABASE_URL: mysqlUrl, LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_PORT: '0', LEADS_LOG_LEVEL: 'silent'})
// The bench's own handle, to seed leads straight into the store; the daemon runs on it too.
const db = createDb(config.database)
const daemon = await startDaemon(config, createLogger('silent'), {autoMigrate: true, requireCurrentSchema: false, role: 'api', db})
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-pull-bench-'))

async function customerWith(count: number): Promise<{customerId: string; token: string}> {
  const customer = await daemon.services.customers.create({name: `bench pull ${count}`})
  const [stage] = await daemon.services.customers.listStages(customer.id)
  // Internal: 1,000 pages is more than an hour's default budget.
  const {token} = await daemon.services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read'], internal: true})
  const base = Date.now() - count * 10
  const store = (await createStores(db)).leadWrites
  for (let start = 0; start < count; start += 5000) {
    const batch: LeadRecord[] = Array.from({length: Math.min(5000, count - start)}, (_, j) => {
      const i = start + j
      return {
        id: randomUUID(),
        customerId: customer.id,
        sourcePlatform: 'direct',
        sourceType: 'form',
        status: 'active',
        createdAt: base + i * 10,
        updatedAt: base + i * 10,
        contactName: `Pull ${i}`,
        contactPhone: `555${String(i).padStart(7, '0')}`,
        contactEmail: `pull${i}@example.org`,
        score: null,
        qualified: null,
        stageId: stage!.id,
        ownerId: null,
        lastInteractionAt: null,
        interactionCount: 0,
        leadLine: null,
        customFields: {lead_line: null},
      }
    })
    // Seeded straight into the table, the leads are pending in the change feed: the pull sequences them as it goes.
    await store.insertMany(batch)
  }
  return {customerId: customer.id, token}
}

async function timedPull(customerId: string, token: string): Promise<{seconds: number; rssMb: number; lines: number}> {
  const output = path.join(dir, `${customerId}.ndjson`)
  const timeLog = path.join(dir, `${customerId}.time`)
  const started = performance.now()
  const child = spawn(
    '/usr/bin/time',
    ['-v', '-o', timeLog, process.execPath, path.join(ROOT, 'bin/run.js'), 'pull', '--state', path.join(dir, `${customerId}.state`)],
    {
      env: {...process.env, LEADS_BASE_URL: daemon.url, LEADS_API_TOKEN: token, LEADS_CUSTOMER_ID: customerId},
      stdio: ['ignore', fs.openSync(output, 'w'), 'inherit'],
    },
  )
  const code = await new Promise((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`pull exited ${code}`)
  const seconds = (performance.now() - started) / 1000
  const rssKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(fs.readFileSync(timeLog, 'utf8'))?.[1])
  const lines = fs.readFileSync(output, 'utf8').split('\n').filter(Boolean).length
  return {seconds, rssMb: rssKb / 1024, lines}
}

try {
  const small = await customerWith(10_000)
  const large = await customerWith(100_000)
  const baseline = await timedPull(small.customerId, small.token)
  const full = await timedPull(large.customerId, large.token)
  console.log('leads pull from a local daemon on MariaDB, 100 leads per page, NDJSON to a file')
  console.log('leads     seconds  leads/s  peak RSS MB')
  for (const [count, run] of [
    [10_000, baseline],
    [100_000, full],
  ] as const) {
    if (run.lines !== count) throw new Error(`expected ${count} leads, got ${run.lines}`)
    console.log(
      `${String(count).padStart(7)}  ${run.seconds.toFixed(1).padStart(7)}  ${(count / run.seconds).toFixed(0).padStart(7)}  ${run.rssMb.toFixed(0).padStart(11)}`,
    )
  }
  console.log(`peak RSS ratio 100k/10k: ${(full.rssMb / baseline.rssMb).toFixed(2)}x (flat memory ~1x); bar: 100k in < 60 s`)
} finally {
  fs.rmSync(dir, {recursive: true, force: true})
  await daemon.stop()
  await db.destroy()
}
