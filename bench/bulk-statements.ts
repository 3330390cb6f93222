/**
 * Where a bulk request of 500 new leads (or, with --single, a lone create of one new lead, no
 * Idempotency-Key) spends the database's time, statement by statement, for
 * one or two builds: the server's own execution time of each statement (MariaDB's slow query log
 * with long_query_time 0, into mysql.slow_log) beside each request's time through the API. It
 * tells a bulk made slower by what it writes (wider rows, more of them) from one made slower in
 * the daemon, as does the CPU time the daemon and the database server each spend per request.
 * Builds take turns, a few requests each, so both see the same machine.
 *
 * Run (each checkout built; the older build given this checkout's migrations, or a database of its
 * own in its settings, as in compare-builds.ts):
 *   LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench LEADS_BENCH_REDIS_URL=redis://127.0.0.1:6379/14 \
 *     node dist/bench/bulk-statements.js [--single] [<checkout A> [<checkout B>]]
 * It switches the server's slow query log on for the run and back as it was (it needs a user
 * allowed to SET GLOBAL). The figures go to bench/results/bulk-statements-<ISO 8601 basic time>.json.
 */

import {parseArgs} from 'node:util'

import mysql from 'mysql2/promise'

import {buildTenant} from './build-tenant.js'
import {checkoutSpec, type DaemonProcess, spawnDaemon} from './daemon-process.js'
import {LoadConnection} from './http-load.js'
import {NewPeopleBulks, NewPeopleCreates} from './new-people-bulk.js'
import {databasePid, processCpuMs} from './process-cpu.js'
import {median} from './push-floor.js'
import {checkoutCommit, writeResults} from './results-file.js'

const ROUNDS = 6

const {values: flags, positionals} = parseArgs({allowPositionals: true, options: {single: {type: 'boolean', default: false}}})
/** Requests per build's turn, and untimed ones first: a lone create takes a hundredth of a bulk's time. */
const PER_TURN = flags.single ? 100 : 5
const WARMUP = flags.single ? 200 : 10
const mysqlUrl = process.env['LEADS_BENCH_MYSQL_URL']
const specs = (positionals.length > 0 ? positionals : ['.']).map(checkoutSpec)
if (!mysqlUrl || specs.length > 2) {
  console.error(
    'usage: LEADS_BENCH_MYSQL_URL=mysql://… [LEADS_BENCH_REDIS_URL=redis://…] node dist/bench/bulk-statements.js [--single] [<checkout A> [<checkout B>]]',
  )
  process.exit(2)
}
const redisUrl = process.env['LEADS_BENCH_REDIS_URL']
const env = {LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_DATABASE_URL: mysqlUrl, ...(redisUrl ? {LEADS_REDIS_URL: redisUrl} : {})}
const startedAt = new Date()

const admin = await mysql.createConnection(mysqlUrl)
const [[before]] = (await admin.query(
  'SELECT @@GLOBAL.log_output AS output, @@GLOBAL.long_query_time AS seconds, @@GLOBAL.slow_query_log AS enabled',
)) as unknown as [Array<{output: string; seconds: number; enabled: number}>]
// Set before the daemons connect: a session takes long_query_time when it opens.
await admin.query("SET GLOBAL log_output = 'TABLE', long_query_time = 0, slow_query_log = 1")

interface Build {
  label: string
  daemon: DaemonProcess
  connection: LoadConnection
  requests: NewPeopleBulks | NewPeopleCreates
  requestsMs: number[]
  /** Server time per statement kind, summed over the build's timed requests. */
  statementMs: Map<string, number>
  /** CPU time of the daemon and of the database server over the build's timed requests, summed. */
  cpuMs: {daemon: number; database: number}
}
const builds: Build[] = []

/** A statement's kind: its verb and table, e.g. "INSERT lead_search_words". */
function kindOf(sql: string): string {
  // An INSERT's table follows INTO, also when it inserts what a SELECT reads from elsewhere.
  const insert = /^insert into\s+`?(\w+)/i.exec(sql)
  if (insert) return `INSERT ${insert[1]}`
  const match = /^\(?\s*(select|insert into|update|delete from|commit|start transaction|rollback)\b\s*(?:.*?\bfrom\s+)?`?(\w+)?/is.exec(sql)
  if (!match) return sql.slice(0, 30)
  const verb = match[1]!.toUpperCase().replace(' INTO', '').replace(' FROM', '')
  return verb === 'COMMIT' || verb === 'START TRANSACTION' || verb === 'ROLLBACK' ? verb : `${verb} ${match[2] ?? ''}`.trim()
}

const serverPid = databasePid()

/** The build's daemon's CPU time so far and the database server's, in ms (0 where it cannot be read). */
function cpuNow(build: Build): {daemon: number; database: number} {
  return {daemon: processCpuMs(build.daemon.child.pid!) ?? 0, database: serverPid === null ? 0 : (processCpuMs(serverPid) ?? 0)}
}

try {
  for (const {label, root, settings} of specs) {
    // The operator's part (schema, customer, key) is done by the build's own code.
    const {headers} = await buildTenant(root, {...env, ...settings}, 'bench bulk statements')
    const daemon = await spawnDaemon({...env, ...settings}, 'api', undefined, root)
    const connection = await LoadConnection.open(daemon.url)
    const requests = flags.single ? new NewPeopleCreates(headers) : new NewPeopleBulks(headers)
    builds.push({label, daemon, connection, requests, requestsMs: [], statementMs: new Map(), cpuMs: {daemon: 0, database: 0}})
  }
  for (const build of builds) for (let i = 0; i < WARMUP; i++) await build.requests.send(build.connection)
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
      await admin.query('TRUNCATE mysql.slow_log')
      const cpuBefore = cpuNow(build)
      for (let i = 0; i < PER_TURN; i++) build.requestsMs.push(await build.requests.send(build.connection))
      const cpuAfter = cpuNow(build)
      build.cpuMs.daemon += cpuAfter.daemon - cpuBefore.daemon
      build.cpuMs.database += cpuAfter.database - cpuBefore.database
      const [rows] = (await admin.query(
        "SELECT CONVERT(sql_text USING utf8mb4) AS sql_text, TIME_TO_SEC(query_time) * 1000 AS ms FROM mysql.slow_log WHERE sql_text NOT LIKE '%slow_log%'",
      )) as unknown as [Array<{sql_text: string; ms: number | string}>]
      for (const row of rows) build.statementMs.set(kindOf(row.sql_text), (build.statementMs.get(kindOf(row.sql_text)) ?? 0) + Number(row.ms))
    }
  }
} finally {
  await admin.query('SET GLOBAL slow_query_log = ?, long_query_time = ?, log_output = ?', [before!.enabled, before!.seconds, before!.output])
  await admin.end()
  for (const build of builds) {
    build.connection.close()
    await build.daemon.stop()
  }
}

const requests = ROUNDS * PER_TURN
const figures = builds.map((build) => ({
  label: build.label,
  ...checkoutCommit(specs.find((spec) => spec.label === build.label)!.root),
  request_median_ms: median(build.requestsMs),
  server_ms_per_request: Object.fromEntries([...build.statementMs].sort(([, a], [, b]) => b - a).map(([kind, ms]) => [kind, ms / requests])),
  server_total_ms_per_request: [...build.statementMs.values()].reduce((sum, ms) => sum + ms, 0) / requests,
  daemon_cpu_ms_per_request: build.cpuMs.daemon / requests,
  database_cpu_ms_per_request: serverPid === null ? null : build.cpuMs.database / requests,
}))
console.log(
  `${flags.single ? 'Single creates of one new lead, no key' : 'Bulk requests of 500 new leads'} (MariaDB${redisUrl ? ' + Redis' : ''}), ${requests} per build after ${WARMUP} untimed, builds taking turns of ${PER_TURN}`,
)
for (const build of figures) {
  console.log(
    `${build.label} (${build.commit?.slice(0, 7) ?? '?'}): request median ${build.request_median_ms.toFixed(1)} ms, server time ${build.server_total_ms_per_request.toFixed(1)} ms; CPU per request: daemon ${build.daemon_cpu_ms_per_request.toFixed(1)} ms, database ${build.database_cpu_ms_per_request?.toFixed(1) ?? 'not measured'} ms`,
  )
  for (const [kind, ms] of Object.entries(build.server_ms_per_request).slice(0, 8)) console.log(`  ${ms.toFixed(2).padStart(7)} ms  ${kind}`)
}
const file = writeResults('bulk-statements', startedAt, {
  bench: 'bench/bulk-statements.ts',
  command: `node dist/bench/bulk-statements.js ${process.argv.slice(2).join(' ')}`.trim(),
  started_at: startedAt.toISOString(),
  settings: {
    single: flags.single,
    rounds: ROUNDS,
    requests_per_turn: PER_TURN,
    warmup_requests: WARMUP,
    rows_per_request: flags.single ? 1 : 500,
    redis: Boolean(redisUrl),
  },
  builds: figures,
})
console.log(`results: ${file}`)
