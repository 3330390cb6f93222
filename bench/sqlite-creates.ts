/**
 * Single creates on the embedded default (SQLite), in-process through each checkout's own write
 * service: no HTTP, no worker, so what differs between two builds is their write path and SQLite
 * client. Each round runs every checkout once, in a child process of its own on a fresh database
 * file (16 creates at a time after untimed warm-up ones), the order swapped round by round.
 *
 * Run (each checkout built, e.g. a `git worktree` of the commit before a change):
 *   node dist/bench/sqlite-creates.js [--rounds 3] [--creates 3000] <checkout A> [<checkout B>]
 * The figures go to bench/results/sqlite-creates-<ISO 8601 basic time>.json.
 */
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {parseArgs} from 'node:util'

import {median} from './push-floor.js'
import {checkoutCommit, writeResults} from './results-file.js'

const WARMUP = 500
const CONCURRENCY = 16

interface RoundResult {
  createsPerSecond: number
  cpuMsPerCreate: number
}

/** The child's part: `count` creates through the checkout's services, on a database file of its own. */
async function measure(root: string, count: number): Promise<RoundResult> {
  const load = async (module: string) => import(pathToFileURL(path.join(root, 'dist/src', module)).href)
  const {loadConfig} = await load('config/config.js')
  const {createServices} = await load('services.js')
  const {createLogger} = await load('log/logger.js')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-creates-'))
  const services = await createServices(loadConfig({LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_DATABASE_URL: `sqlite://${dir}/bench.db`}), {
    logger: createLogger('silent'),
    autoMigrate: true,
  })
  try {
    const customer = await services.customers.create({name: 'bench sqlite creates'})
    const create = (i: number) =>
      services.leadsWrite.create(customer.id, {
        contact_name: `Person ${i}`,
        contact_email: `p${i}@example.org`,
        contact_phone: `+1 555 ${String(i).padStart(7, '0')}`,
      })
    for (let i = 0; i < WARMUP; i++) await create(count + i)
    const cpu = process.cpuUsage()
    const started = performance.now()
    await Promise.all(
      Array.from({length: CONCURRENCY}, async (_, lane) => {
        for (let i = lane; i < count; i += CONCURRENCY) await create(i)
      }),
    )
    const elapsed = performance.now() - started
    const used = process.cpuUsage(cpu)
    return {createsPerSecond: (count / elapsed) * 1000, cpuMsPerCreate: (used.user + used.system) / 1000 / count}
  } finally {
    await services.close()
    fs.rmSync(dir, {recursive: true, force: true})
  }
}

const {values: args, positionals} = parseArgs({
  allowPositionals: true,
  options: {rounds: {type: 'string', default: '3'}, creates: {type: 'string', default: '3000'}, child: {type: 'string'}},
})
const creates = Number(args.creates)

if (args.child) {
  console.log(JSON.stringify(await measure(args.child, creates)))
} else {
  if (positionals.length === 0) {
    console.error('usage: node dist/bench/sqlite-creates.js [--rounds N] [--creates N] <checkout A> [<checkout B>]')
    process.exit(2)
  }
  const checkouts = positionals.map((checkout) => path.resolve(checkout))
  const startedAt = new Date()
  const runs = new Map<string, RoundResult[]>(checkouts.map((checkout) => [checkout, []]))
  const self = fileURLToPath(import.meta.url)
  for (let round = 0; round < Number(args.rounds); round++) {
    const order = round % 2 === 0 ? checkouts : [...checkouts].reverse()
    for (const checkout of order) {
      const output = execFileSync(process.execPath, [self, '--child', checkout, '--creates', String(creates)], {encoding: 'utf8'})
      const result = JSON.parse(output.trim().split('\n').at(-1)!) as RoundResult
      runs.get(checkout)!.push(result)
      console.log(`round ${round + 1} ${checkout}: ${result.createsPerSecond.toFixed(0)} creates/s, ${result.cpuMsPerCreate.toFixed(3)} ms CPU each`)
    }
  }
  const builds = checkouts.map((checkout) => {
    const rounds = runs.get(checkout)!
    return {
      checkout,
      ...checkoutCommit(checkout),
      rounds,
      median_creates_per_second: median(rounds.map((r) => r.createsPerSecond)),
      median_cpu_ms_per_create: median(rounds.map((r) => r.cpuMsPerCreate)),
    }
  })
  const file = writeResults('sqlite-creates', startedAt, {
    bench: 'bench/sqlite-creates.ts',
    command: `node dist/bench/sqlite-creates.js --rounds ${args.rounds} --creates ${creates} ${positionals.join(' ')}`,
    started_at: startedAt.toISOString(),
    git_commit: checkoutCommit().commit,
    settings: {creates, warmup: WARMUP, concurrency: CONCURRENCY, database: 'SQLite (in-process, no HTTP, no worker)'},
    builds,
  })
  console.log(`results: ${file}`)
}
