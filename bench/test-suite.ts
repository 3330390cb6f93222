/**
 * How long `npm test` (the SQLite run, no environment) takes on this machine, beside two floors
 * measured in the same run: a bare `node -e 0` start-up and a fixed piece of JavaScript work. The
 * suite starts a few hundred Node processes and is CPU-bound on two cores, so its time follows
 * the machine's speed; the floors say how fast the machine was while it ran, which makes runs on
 * different machines comparable. The bar is the suite under 60 s.
 *
 * Run: npm run build && node dist/bench/test-suite.js [runs]
 * Each run is a whole `npm test` (build included). The figures go to
 * bench/results/test-suite-<ISO 8601 basic time>.json.
 */
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'

import {ROOT} from './daemon-process.js'
import {cpuTimes, stealPercent, stealReport} from './host-steal.js'
import {checkoutCommit, writeResults} from './results-file.js'

const BAR_SECONDS = 60
const STARTUP_RUNS = 20
/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux this project runs on (getconf CLK_TCK). */
const CLOCK_TICKS_PER_SECOND = 100

interface SuiteRun {
  wall_s: number
  /** CPU time of the whole process tree (user + system), from the kernel's counts of waited-for children. */
  cpu_s: number
  passing: number | null
  failing: number | null
  exit_code: number | null
}

/** User + system time of this process's waited-for children so far, in seconds. */
function childrenCpuSeconds(): number {
  const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')
  // cutime and cstime: fields 16 and 17 of proc(5), counted from the state field (field 3).
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS_PER_SECOND
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Median wall time of `node -e 0`, in milliseconds. */
function startupFloorMs(): number {
  const times: number[] = []
  for (let i = 0; i < STARTUP_RUNS; i++) {
    const start = process.hrtime.bigint()
    spawnSync(process.execPath, ['-e', '0'])
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  return median(times)
}

/** Median time of a fixed piece of JavaScript (JSON and string work, as the suite's is), in milliseconds. */
function jsFloorMs(): number {
  const times: number[] = []
  const document = {leads: Array.from({length: 2000}, (_, i) => ({id: `lead-${i}`, name: `Name ${i}`, tags: ['a', 'b', 'c']}))}
  for (let i = 0; i < 15; i++) {
    const start = process.hrtime.bigint()
    for (let j = 0; j < 20; j++) JSON.parse(JSON.stringify(document)).leads.map((lead: {name: string}) => lead.name.toUpperCase())
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  return median(times)
}

function runSuite(): SuiteRun {
  const cpuBefore = childrenCpuSeconds()
  const start = process.hrtime.bigint()
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LEADS_')))
  const result = spawnSync('npm', ['test'], {cwd: ROOT, env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024})
  const wall = Number(process.hrtime.bigint() - start) / 1e9
  const count = (word: string) => {
    const matches = [...result.stdout.matchAll(new RegExp(`^ *(\\d+) ${word}`, 'gm'))]
    // The last summary is the sharding check's; the first is the suite's.
    return matches.length > 0 ? Number(matches[0]![1]) : null
  }
  const passing = count('passing')
  // Mocha prints no "failing" line when nothing failed.
  const failing = count('failing') ?? (passing === null ? null : 0)
  return {wall_s: wall, cpu_s: childrenCpuSeconds() - cpuBefore, passing, failing, exit_code: result.status}
}

const runs = Number(process.argv[2] ?? 1)
const startedAt = new Date()
const before = cpuTimes()
const floors = {node_startup_ms: startupFloorMs(), js_work_ms: jsFloorMs()}
const suite: SuiteRun[] = []
for (let i = 0; i < runs; i++) suite.push(runSuite())
const after = cpuTimes()

console.log(`floors: node -e 0 median ${floors.node_startup_ms.toFixed(1)} ms; fixed JavaScript work median ${floors.js_work_ms.toFixed(1)} ms`)
for (const run of suite)
  console.log(
    `npm test: ${run.wall_s.toFixed(1)} s wall, ${run.cpu_s.toFixed(1)} s CPU, ${run.passing} passing, ${run.failing} failing (bar: under ${BAR_SECONDS} s)`,
  )
console.log(stealReport(before, after))
const file = writeResults('test-suite', startedAt, {
  kind: 'test-suite',
  bench: 'bench/test-suite.ts',
  date: startedAt.toISOString(),
  ...checkoutCommit(),
  what: `npm test with no LEADS_* environment, ${runs} run(s), after the floors`,
  machine: {cores: os.cpus().length, cpu: os.cpus()[0]?.model ?? null, node: process.version, loadavg_at_start: os.loadavg()[0]},
  steal_percent: stealPercent(before, after),
  bar_seconds: BAR_SECONDS,
  floors,
  runs: suite,
  median_wall_s: median(suite.map((run) => run.wall_s)),
})
console.log(`results: ${file}`)
