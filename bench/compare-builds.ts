/**
 * Two builds of the daemon against each other in one run, for a change whose effect is smaller
 * than the machine's own swings: on this shared VM the same build's c=16 rate moves by a third
 * from one minute to the next, with the floors. Both daemons run at once (each its own process,
 * role api, one MariaDB + Redis); single creates alternate between them one by one, bursts of
 * concurrent creates alternate build by build, and so do bulk requests of 500 new leads, so
 * both see the same machine.
 *
 * Run (each checkout built, e.g. a `git worktree` of the commit before a change):
 *   LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench LEADS_BENCH_REDIS_URL=redis://127.0.0.1:6379/14 \
 *     node dist/bench/compare-builds.js <checkout A> <checkout B>
 * The figures go to bench/results/compare-builds-<ISO 8601 basic time>.json.
 *
 * Both daemons share this checkout's schema unless a build's settings name a database of its own.
 * A build older than a migration refuses a database that has it (knex: "the migration directory is
 * corrupt"); when the newer migrations only add what the older code can ignore (columns with
 * defaults, tables it never reads), copy their compiled files into the older build's
 * dist/migrations for the run. When they change what the older build pays for (an index dropped,
 * say), give it a database of its own, which its own code migrates (bench/build-tenant.ts):
 *   node dist/bench/compare-builds.js . /work/before,LEADS_DATABASE_URL=mysql://root@127.0.0.1:3306/leads_bench_before
 * A checkout may carry settings for its daemon after commas, to compare one build with itself:
 *   node dist/bench/compare-builds.js .,LEADS_CREATE_GUESS=on .,LEADS_CREATE_GUESS=off
 */
import {randomUUID} from 'node:crypto'

import {buildTenant} from './build-tenant.js'
import {checkoutSpec, type DaemonProcess, spawnDaemon} from './daemon-process.js'
import {cpuTimes, stealPercent, stealReport} from './host-steal.js'
import {LoadConnection} from './http-load.js'
import {NewPeopleBulks} from './new-people-bulk.js'
import {median, p99} from './push-floor.js'
import {checkoutCommit, writeResults} from './results-file.js'

const SEQUENTIAL = 1000
const ROUNDS = 6
const BURST = 1500
const CONCURRENCY = 16
/** Bulk requests of 500 new leads per build, alternating, after as many untimed. */
const BULKS = 20

const specs = process.argv.slice(2).map(checkoutSpec)
const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
if (specs.length !== 2 || !mysqlUrl) {
  console.error(
    'usage: LEADS_BENCH_MYSQL_URL=mysql://… [LEADS_BENCH_REDIS_URL=redis://…] node dist/bench/compare-builds.js <checkout A>[,VAR=value…] <checkout B>[,VAR=value…]',
  )
  process.exit(2)
}
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
const env = {LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_DATABASE_URL: mysqlUrl, ...(redisUrl ? {LEADS_REDIS_URL: redisUrl} : {})}

interface Build {
  label: string
  daemon: DaemonProcess
  connections: LoadConnection[]
  headers: Record<string, string>
  bulkRequests: NewPeopleBulks
  sequential: number[]
  rates: number[]
  bulks: number[]
}
const builds: Build[] = []
for (const {label, root, settings} of specs) {
  // The operator's part (schema, customer, key) is done by the build's own code.
  const {headers} = await buildTenant(root, {...env, ...settings}, 'bench compare')
  const daemon = await spawnDaemon({...env, ...settings}, 'api', undefined, root)
  const connections = await Promise.all(Array.from({length: CONCURRENCY}, () => LoadConnection.open(daemon.url)))
  builds.push({label, daemon, connections, headers, bulkRequests: new NewPeopleBulks(headers), sequential: [], rates: [], bulks: []})
}

const run = randomUUID().slice(0, 8)
let next = 0
/** One create of a new person; its time in ms. */
async function create(build: Build, connection: LoadConnection): Promise<number> {
  const i = next++
  const body = JSON.stringify({
    contact_name: `Compare ${run} ${i}`,
    contact_email: `compare-${run}-${i}@example.org`,
    contact_phone: `555-${String(i).padStart(7, '0')}`,
  })
  const started = performance.now()
  const response = await connection.post('/api/agents/crm/leads', {...build.headers, 'idempotency-key': randomUUID()}, body)
  if (response.status !== 201) throw new Error(`expected 201, got ${response.status}: ${response.text.slice(0, 300)}`)
  return performance.now() - started
}

const startedAt = new Date()
const cpuAtStart = cpuTimes()
try {
  for (const build of builds) for (let i = 0; i < 200; i++) await create(build, build.connections[0]!)
  for (let i = 0; i < SEQUENTIAL * builds.length; i++) {
    const build = builds[i % builds.length]!
    build.sequential.push(await create(build, build.connections[0]!))
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of builds) {
      let left = BURST
      const started = performance.now()
      await Promise.all(
        build.connections.map(async (connection) => {
          while (left-- > 0) await create(build, connection)
        }),
      )
      build.rates.push(BURST / ((performance.now() - started) / 1000))
    }
  }
  for (let i = 0; i < 2 * BULKS * builds.length; i++) {
    const build = builds[i % builds.length]!
    const took = await build.bulkRequests.send(build.connections[0]!)
    if (i >= BULKS * builds.length) build.bulks.push(took)
  }
} finally {
  for (const build of builds) {
    for (const connection of build.connections) connection.close()
    await build.daemon.stop()
  }
}
const cpuAtEnd = cpuTimes()

console.log(
  `Two builds at once (role api, MariaDB${redisUrl ? ' + Redis' : ''}), alternating: ${SEQUENTIAL} sequential creates each; ${ROUNDS} bursts of ${BURST} creates at c=${CONCURRENCY} each; ${BULKS} bulk requests of 500 new leads each, after ${BULKS} untimed`,
)
for (const build of builds) {
  console.log(build.label)
  console.log(
    `  c=1 median ${median(build.sequential).toFixed(2)} ms, p99 ${p99(build.sequential).toFixed(2)} ms; c=${CONCURRENCY} ${build.rates.map((rate) => rate.toFixed(0)).join(' / ')} creates/s, median ${median(build.rates).toFixed(0)}; bulk 500 new median ${median(build.bulks).toFixed(1)} ms, p99 ${p99(build.bulks).toFixed(1)} ms`,
  )
}
const [a, b] = builds as [Build, Build]
const change = (after: number, before: number) => `${after >= before ? '+' : ''}${((100 * after) / before - 100).toFixed(0)}%`
console.log(
  `B against A: c=1 median ${change(median(b.sequential), median(a.sequential))}, c=${CONCURRENCY} median rate ${change(median(b.rates), median(a.rates))}, bulk median ${change(median(b.bulks), median(a.bulks))}`,
)
console.log(stealReport(cpuAtStart, cpuAtEnd))

const figures = (build: Build) => ({
  c1_median_ms: median(build.sequential),
  c1_p99_ms: p99(build.sequential),
  c16_per_s_bursts: build.rates,
  c16_per_s_median: median(build.rates),
  bulk_500_new_median_ms: median(build.bulks),
  bulk_500_new_p99_ms: p99(build.bulks),
})
const file = writeResults('compare-builds', startedAt, {
  bench: 'bench/compare-builds.ts',
  command: `node dist/bench/compare-builds.js ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  settings: {
    sequential: SEQUENTIAL,
    rounds: ROUNDS,
    burst: BURST,
    concurrency: CONCURRENCY,
    bulks: BULKS,
    database: 'MariaDB',
    redis: Boolean(redisUrl),
    role: 'api',
  },
  builds: builds.map((build, i) => ({
    name: i === 0 ? 'A' : 'B',
    checkout: build.label,
    settings: specs[i]!.settings,
    ...checkoutCommit(specs[i]!.root),
    ...figures(build),
  })),
  b_over_a: {
    c1_median: median(b.sequential) / median(a.sequential),
    c16_rate: median(b.rates) / median(a.rates),
    bulk_median: median(b.bulks) / median(a.bulks),
  },
  steal_percent: stealPercent(cpuAtStart, cpuAtEnd),
})
console.log(`results: ${file}`)
