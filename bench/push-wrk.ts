/**
 * Single creates against their floor with wrk as the load client, for the bars "single create at
 * c=16 at least 75% of the one-lead-one-event floor; c=1 median at most 1.5x that floor", taken
 * with the floor in the same run. wrk (one thread, in C) drives the daemon and the floor alike
 * over loopback HTTP: no load client in Node takes a core from them (push.ts and compare-builds.ts
 * have one in the bench process), and the floor pays the HTTP hop a create pays. The floor is a
 * plain node:http server in its own process whose every POST is one transaction of a lead and its
 * event into copies of the service's tables (push-floor-server.ts); the service is the daemon
 * (role api) of one or two checkouts, as in compare-builds.ts.
 *
 * Bursts alternate between the targets (the floor, then each build): an untimed warm-up burst of
 * each at c=16 and then at c=1, and then rounds, each a burst of every target at c=16 and then at
 * c=1, the order rotating from round to round so no target always runs after the same one.
 * Throughput comes from the c=16 bursts, the median and p99 from the c=1 bursts (wrk's own
 * latency figures). A build's ratio to the floor is taken within each round, from bursts run
 * back to back, and the table shows its median over the rounds. Every request is a new lead with
 * its own Idempotency-Key (bench/wrk/create.lua), or none with --unkeyed: the floor stores no key,
 * so an unkeyed create is the like-for-like comparison; any answer but 201 fails the run.
 *
 * Run (each checkout built; a checkout may carry settings for its daemon after commas, as in
 * compare-builds.ts; with none, this checkout runs):
 *   LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench LEADS_BENCH_REDIS_URL=redis://127.0.0.1:6379/14 \
 *     node dist/bench/push-wrk.js [--rounds 6] [--seconds 5] [--warmup 5] [--unkeyed] [<checkout A> [<checkout B>]]
 * A quick check that it works end to end: --rounds 2 --seconds 1 --warmup 1.
 * --phases splits each c=1 request on the wire into its time before the database, in it and after
 * it (bench/wire-phases.ts: tcpdump, as root), to tell a build's own code from its statements.
 * The figures go to bench/results/push-wrk-<ISO 8601 basic time>.json. An older build runs on
 * this checkout's schema, or on a database of its own named in its settings, as in
 * compare-builds.ts.
 */
import {execFile, execFileSync, spawn} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {parseArgs, promisify} from 'node:util'

import {loadConfig} from '../src/config/config.js'
import {createLogger} from '../src/log/logger.js'
import {createServices} from '../src/services.js'
import {type BuildTenant, buildTenant} from './build-tenant.js'
import {checkoutSpec, type DaemonProcess, freePort, ROOT, spawnDaemon} from './daemon-process.js'
import {cpuTimes, stealPercent, stealReport} from './host-steal.js'
import {databasePid, meterCpu} from './process-cpu.js'
import type {FloorReport, FloorRequest} from './push-floor-server.js'
import {checkoutCommit, writeResults} from './results-file.js'
import {captureWire, type WirePhases, wireCaptureProblem} from './wire-phases.js'

const WRK = '/usr/bin/wrk'
const SCRIPT = path.join(ROOT, 'bench/wrk/create.lua')
const CREATE_PATH = '/api/agents/crm/leads'
const CONCURRENCIES = [16, 1] as const
/** A request slower than this counts as a wrk error, and fails the run. */
const WRK_TIMEOUT = '10s'
/**
 * The floor's stock of built rows before a burst: this many times what its fastest burst so far,
 * at either concurrency, served in as long, so no burst runs out (it would build rows on the
 * clock, and building is a sizeable share of a floor transaction's CPU). The margin is wide
 * because the floor still speeds up over its first bursts after the warm-up. Rows left over serve
 * the next burst: only what a burst took is built again.
 */
const STOCK_MARGIN = 3
const BARS = {c16PercentOfFloor: 75, c1MedianOverFloor: 1.5}
/** create.lua puts the burst's number in three digits of each phone number. */
const MAX_BURSTS = 1000

const usage = (problem: string): never => {
  console.error(
    `${problem}\nusage: LEADS_BENCH_MYSQL_URL=mysql://… [LEADS_BENCH_REDIS_URL=redis://…] node dist/bench/push-wrk.js [--rounds N] [--seconds S] [--warmup S] [--unkeyed] [--phases] [<checkout A>[,VAR=value…] [<checkout B>[,VAR=value…]]]`,
  )
  process.exit(2)
}
const {values: flags, positionals} = parseArgs({
  allowPositionals: true,
  options: {
    rounds: {type: 'string', default: '6'},
    seconds: {type: 'string', default: '5'},
    warmup: {type: 'string', default: '5'},
    unkeyed: {type: 'boolean', default: false},
    phases: {type: 'boolean', default: false},
  },
})
const wholeNumber = (name: keyof typeof flags): number => {
  const value = Number(flags[name])
  return Number.isInteger(value) && value > 0 ? value : usage(`--${name} takes a whole number above 0`)
}
const ROUNDS = wholeNumber('rounds')
const SECONDS = wholeNumber('seconds')
const WARMUP_SECONDS = wholeNumber('warmup')
const specs = (positionals.length > 0 ? positionals : [ROOT]).map((arg, i) => ({...checkoutSpec(arg), name: i === 0 ? 'A' : 'B'}))
const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
if (!mysqlUrl) usage('LEADS_BENCH_MYSQL_URL is not set')
if (specs.length > 2) usage('at most two checkouts')
if ((1 + specs.length) * CONCURRENCIES.length * (ROUNDS + 1) > MAX_BURSTS) usage(`more than ${MAX_BURSTS} bursts`)
if (!fs.existsSync(WRK)) usage(`no wrk at ${WRK}: apt-get install -y wrk`)
if (flags.phases) {
  const problem = wireCaptureProblem()
  if (problem) usage(`--phases: ${problem}`)
}
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
const env = {LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_DATABASE_URL: mysqlUrl!, ...(redisUrl ? {LEADS_REDIS_URL: redisUrl} : {})}

// The schema has to be there before the floor copies its tables: this checkout's. Each build's
// customer and internal key (no rate limit) are made by its own code, in its own database when
// its settings name one (bench/build-tenant.ts).
const services = await createServices(loadConfig(env), {logger: createLogger('silent'), autoMigrate: true})
const floorCustomer = await services.customers.create({name: 'bench push-wrk floor'})
await services.close()

interface FloorServer {
  url: string
  pid: number | undefined
  /** Has the server keep at least `stock` transactions built, then reports its counts. */
  stockUp(stock: number): Promise<FloorReport>
  stop(): Promise<void>
}

async function spawnFloorServer(url: string): Promise<FloorServer> {
  const port = await freePort()
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/bench/push-floor-server.js')], {
    env: {...process.env, LEADS_BENCH_MYSQL_URL: url, LEADS_BENCH_FLOOR_PORT: String(port)},
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const nextReport = () =>
    new Promise<FloorReport>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the floor server exited with ${code}`))
      child.once('exit', onExit)
      child.once('message', (report) => {
        child.off('exit', onExit)
        resolve(report as FloorReport)
      })
    })
  await nextReport()
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stockUp(stock) {
      const report = nextReport()
      child.send({stock} satisfies FloorRequest)
      return report
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

interface WrkResult {
  requests: number
  duration_us: number
  non201: number
  errors: {connect: number; read: number; write: number; status: number; timeout: number}
  latency_us: {p50: number; p99: number; mean: number; max: number}
}

/** The median of the rounds' figures: with an even number of rounds, the mean of the middle two. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const half = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2
}

const runId = randomUUID().slice(0, 8)
const execFileAsync = promisify(execFile)

/** One wrk run of `seconds` at `concurrency` against `url`; fails on any answer but 201 and on any socket error. */
async function wrk(target: Target, concurrency: number, seconds: number, burst: number): Promise<WrkResult> {
  const {label, url} = target
  const args = ['-t1', `-c${concurrency}`, `-d${seconds}s`, '--timeout', WRK_TIMEOUT, '-s', SCRIPT, `${url}${CREATE_PATH}`]
  const {token, customerId} = target.tenant ?? {token: 'floor', customerId: floorCustomer.id}
  const {stdout} = await execFileAsync(WRK, [...args, '--', token, customerId, runId, String(burst), ...(flags.unkeyed ? ['unkeyed'] : [])])
  const line = stdout.split('\n').find((candidate) => candidate.startsWith('wrk-result '))
  if (!line) throw new Error(`${label} at c=${concurrency}: wrk printed no result:\n${stdout}`)
  const result = JSON.parse(line.slice('wrk-result '.length)) as WrkResult
  const {connect, read, write, timeout} = result.errors
  if (result.non201 > 0 || connect + read + write + timeout > 0) {
    throw new Error(
      `${label} at c=${concurrency}: ${result.non201} answers other than 201, socket errors ${JSON.stringify(result.errors)}; wrk printed:\n${stdout}`,
    )
  }
  return result
}

const wrkVersion = (() => {
  try {
    return execFileSync(WRK, ['-v'], {encoding: 'utf8'}).split('\n')[0]!.trim()
  } catch (error) {
    // wrk -v prints its version with the usage and exits 1.
    return String((error as {stdout?: string}).stdout ?? '')
      .split('\n')[0]!
      .trim()
  }
})()

interface Target {
  label: string
  url: string
  pid: number | undefined
  floor: FloorServer | null
  /** The customer a build's creates are for; null for the floor. */
  tenant: BuildTenant | null
}

interface Burst {
  target: string
  round: number | 'warm-up'
  concurrency: number
  requests: number
  seconds: number
  per_second: number
  latency_us: WrkResult['latency_us']
  steal_percent: number | null
  /** CPU time over the burst of the process answering (the daemon or the floor server) and of the database server. */
  cpu_ms: {target: number | null; database: number | null}
  /** The floor only: requests that found its stock of built rows empty. */
  floor_rows_built_on_demand?: number
  /** With --phases, at c=1: each request split at its packets (bench/wire-phases.ts). */
  wire_phases?: WirePhases | null
}

const startedAt = new Date()
const database = databasePid()
const databasePort = Number(new URL(mysqlUrl!).port || 3306)
const bursts: Burst[] = []
const floorServer = await spawnFloorServer(mysqlUrl!)
const daemons: DaemonProcess[] = []
const targets: Target[] = [{label: 'floor', url: floorServer.url, pid: floorServer.pid, floor: floorServer, tenant: null}]
const cpuAtStart = cpuTimes()
try {
  for (const {name, root, settings} of specs) {
    const tenant = await buildTenant(root, {...env, ...settings}, 'bench push-wrk')
    const daemon = await spawnDaemon({...env, ...settings}, 'api', undefined, root)
    daemons.push(daemon)
    targets.push({label: name, url: daemon.url, pid: daemon.child.pid, floor: null, tenant})
  }

  const runBurst = async (target: Target, concurrency: number, seconds: number, round: Burst['round']) => {
    if (bursts.length >= MAX_BURSTS) throw new Error(`more than ${MAX_BURSTS} bursts`)
    // The floor's first burst, a warm-up, builds its rows as they are asked for.
    const fastest = Math.max(0, ...bursts.filter((b) => b.target === 'floor').map((b) => b.per_second))
    const before = await target.floor?.stockUp(Math.ceil(STOCK_MARGIN * fastest * seconds))
    const steal = cpuTimes()
    const capture = flags.phases && concurrency === 1 ? await captureWire(Number(new URL(target.url).port), databasePort) : null
    const cpu = meterCpu({target: target.pid, database})
    const result = await wrk(target, concurrency, seconds, bursts.length)
    const [targetCpu, databaseCpu] = cpu.stop().processes
    const wirePhases = await capture?.stop()
    const after = await target.floor?.stockUp(0)
    bursts.push({
      target: target.label,
      round,
      concurrency,
      requests: result.requests,
      seconds: result.duration_us / 1e6,
      per_second: result.requests / (result.duration_us / 1e6),
      latency_us: result.latency_us,
      steal_percent: stealPercent(steal, cpuTimes()),
      cpu_ms: {target: targetCpu!.cpuMs, database: databaseCpu!.cpuMs},
      ...(before && after ? {floor_rows_built_on_demand: after.builtOnDemand - before.builtOnDemand} : {}),
      ...(capture ? {wire_phases: wirePhases} : {}),
    })
  }
  for (const concurrency of CONCURRENCIES) {
    for (const target of targets) {
      // The floor's warm-up is repeated until a burst has not run out of built rows: the first
      // has none, and a cold first burst sizes the next one's stock too small. A burst that ran out
      // served more than its stock, so each repeat's stock is STOCK_MARGIN times the last: this
      // ends within a few.
      do await runBurst(target, concurrency, WARMUP_SECONDS, 'warm-up')
      while ((bursts.at(-1)!.floor_rows_built_on_demand ?? 0) > 0)
    }
  }
  for (let round = 1; round <= ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!)
    for (const concurrency of CONCURRENCIES) for (const target of order) await runBurst(target, concurrency, SECONDS, round)
  }
} finally {
  for (const daemon of daemons) await daemon.stop()
  await floorServer.stop()
}
const cpuAtEnd = cpuTimes()

const timed = (label: string, concurrency: number) => bursts.filter((b) => b.target === label && b.concurrency === concurrency && b.round !== 'warm-up')
/** The median over the rounds of a target's figure over another's in the same round. */
const overRounds = (label: string, base: string, concurrency: number, figure: (burst: Burst) => number) =>
  median(timed(label, concurrency).map((burst) => figure(burst) / figure(timed(base, concurrency).find((other) => other.round === burst.round)!)))
const rate = (burst: Burst) => burst.per_second
const p50 = (burst: Burst) => burst.latency_us.p50
const summaries = targets.map(({label}) => ({
  label,
  c16_per_second: median(timed(label, 16).map(rate)),
  c1_p50_ms: median(timed(label, 1).map(p50)) / 1000,
  c1_p99_ms: median(timed(label, 1).map((burst) => burst.latency_us.p99)) / 1000,
  c16_cpu_us_per_request: {
    target: median(timed(label, 16).map((burst) => (1000 * (burst.cpu_ms.target ?? NaN)) / burst.requests)),
    database: median(timed(label, 16).map((burst) => (1000 * (burst.cpu_ms.database ?? NaN)) / burst.requests)),
  },
  ...(flags.phases ? {c1_wire_phases_us: wirePhasesOverRounds(label)} : {}),
  ...(label === 'floor' ? {} : {c16_percent_of_floor: 100 * overRounds(label, 'floor', 16, rate), c1_p50_over_floor: overRounds(label, 'floor', 1, p50)}),
}))
const WIRE_PHASES = [
  ['before_database', 'before the database (wire)'],
  ['database', 'in the database (wire)'],
  ['after_database', 'after the database (wire)'],
  ['total', 'in all (wire)'],
] as const
/** Each phase's median over a target's timed c=1 bursts. */
function wirePhasesOverRounds(label: string) {
  const phases = timed(label, 1).flatMap((burst) => (burst.wire_phases ? [burst.wire_phases] : []))
  const over = (phase: keyof WirePhases) => (phases.length === 0 ? undefined : median(phases.map((one) => one[phase])))
  return {before_database: over('before_database_us'), database: over('database_us'), after_database: over('after_database_us'), total: over('total_us')}
}
const bAgainstA = specs.length === 2 ? {c16_rate: overRounds('B', 'A', 16, rate), c1_p50: overRounds('B', 'A', 1, p50)} : null
const steal = stealPercent(cpuAtStart, cpuAtEnd)
const floorShort = bursts.filter((burst) => burst.round !== 'warm-up' && (burst.floor_rows_built_on_demand ?? 0) > 0).length

const result = {
  bench: 'bench/push-wrk.ts',
  command: `node dist/bench/push-wrk.js ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  git_commit: checkoutCommit().commit,
  builds: specs.map(({name, label, root, settings}) => ({name, checkout: label, root, settings, ...checkoutCommit(root)})),
  // The CPU's model tells runs on different machines apart: their daemons' own work differs more than their floors.
  host: {cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? null, node: process.version, wrk: wrkVersion},
  settings: {
    rounds: ROUNDS,
    idempotency_keys: !flags.unkeyed,
    burst_seconds: SECONDS,
    warmup_seconds: WARMUP_SECONDS,
    concurrencies: CONCURRENCIES,
    wrk_threads: 1,
    database: 'MariaDB',
    redis: Boolean(redisUrl),
    role: 'api',
    wire_phases: flags.phases,
  },
  bars: {c16_percent_of_floor_at_least: BARS.c16PercentOfFloor, c1_p50_over_floor_at_most: BARS.c1MedianOverFloor},
  summary: summaries,
  b_over_a: bAgainstA,
  bursts,
  steal_percent: steal,
}
const file = writeResults('push-wrk', startedAt, result)

console.log(
  `Single creates through the daemon (role api, MariaDB${redisUrl ? ' + Redis' : ''}) against the floor (HTTP + one lead-and-event transaction into copies of the service's tables), wrk with one thread: after a ${WARMUP_SECONDS} s warm-up burst of each, ${ROUNDS} rounds of ${SECONDS} s bursts at c=16 then at c=1, alternating`,
)
const fixed = (value: number | undefined, digits: number, unit = '') => (value === undefined ? '' : `${value.toFixed(digits)}${unit}`)
const rows = [
  ['', ...summaries.map((summary) => summary.label), 'bar'],
  ['c=16 creates/s, median of rounds', ...summaries.map((summary) => fixed(summary.c16_per_second, 0)), ''],
  ['c=16 % of the floor, median of rounds', ...summaries.map((summary) => fixed(summary.c16_percent_of_floor, 0, '%')), `>= ${BARS.c16PercentOfFloor}%`],
  ['c=1 median ms, median of rounds', ...summaries.map((summary) => fixed(summary.c1_p50_ms, 2)), ''],
  ['c=1 p99 ms, median of rounds', ...summaries.map((summary) => fixed(summary.c1_p99_ms, 2)), ''],
  ['c=1 median over the floor, median of rounds', ...summaries.map((summary) => fixed(summary.c1_p50_over_floor, 2, 'x')), `<= ${BARS.c1MedianOverFloor}x`],
  ['c=16 CPU µs per request: answering process', ...summaries.map((summary) => fixed(summary.c16_cpu_us_per_request.target, 0)), ''],
  ['c=16 CPU µs per request: database', ...summaries.map((summary) => fixed(summary.c16_cpu_us_per_request.database, 0)), ''],
  ...(flags.phases
    ? WIRE_PHASES.map(([phase, name]) => [`c=1 µs ${name}, median of rounds`, ...summaries.map((summary) => fixed(summary.c1_wire_phases_us?.[phase], 0)), ''])
    : []),
]
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
for (const row of rows) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
for (const {label} of targets) {
  console.log(
    `${label} by round: c=16 ${timed(label, 16)
      .map((burst) => burst.per_second.toFixed(0))
      .join(' / ')} creates/s; c=1 median ${timed(label, 1)
      .map((burst) => (burst.latency_us.p50 / 1000).toFixed(2))
      .join(' / ')} ms`,
  )
}
for (const build of result.builds) {
  console.log(`${build.name}: ${build.checkout}, ${build.commit ?? 'no git commit'}${build.dirty ? ' (uncommitted changes)' : ''}`)
}
if (bAgainstA) {
  const change = (ratio: number) => `${ratio >= 1 ? '+' : ''}${(100 * ratio - 100).toFixed(0)}%`
  console.log(`B against A, round by round (median): c=16 rate ${change(bAgainstA.c16_rate)}, c=1 median ${change(bAgainstA.c1_p50)}`)
}
if (floorShort > 0) console.log(`The floor ran out of built rows in ${floorShort} timed bursts and built them on the clock: its figures there are low`)
console.log(stealReport(cpuAtStart, cpuAtEnd))
console.log(`results: ${path.relative(process.cwd(), file)}`)
