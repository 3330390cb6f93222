/**
 * How long `npm test` (the SQLite run, no environment) takes on this machine, beside two floors
 * measured in the same run: a bare `node -e 0` start-up and a fixed piece of JavaScript work. The
 * suite starts about sixty Node processes and is CPU-bound on two cores, so its time follows the
 * machine's speed; the floors say how fast the machine was while it ran, which makes runs on
 * different machines comparable. The bar is the suite under 60 s.
 *
 * Run: npm run build && node dist/bench/test-suite.js [runs]
 * Each run is a whole `npm test` (build included). Every Node process of a run records its own CPU
 * time as it exits (process-cpu-record.ts), and each run's figures say which kinds of process
 * (mocha's workers, `leads daemon`, npm, …) the CPU went to; what no Node process recorded (tsc,
 * the shell and `script`, a process killed by a signal) is the rest. The figures go to
 * bench/results/test-suite-<ISO 8601 basic time>.json.
 */
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {pathToFileURL} from 'node:url'

import {ROOT} from './daemon-process.js'
import {cpuTimes, stealPercent, stealReport} from './host-steal.js'
import {cpuByKind, type KindCpu, type ProcessCpu} from './process-kinds.js'
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
  /** The CPU time the run's Node processes recorded, by kind of process, the most first. */
  cpu_by_kind: KindCpu[]
  /** cpu_s less what the Node processes recorded. */
  cpu_unrecorded_s: number
}

/** The hook each Node process of a run loads (process-cpu-record.ts), as an --import argument. */
const RECORD_HOOK = `--import ${pathToFileURL(path.join(ROOT, 'dist/bench/process-cpu-record.js')).href}`

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
  const record = path.join(os.tmpdir(), `leads-test-suite-cpu-${process.pid}.jsonl`)
  fs.rmSync(record, {force: true})
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LEADS_'))),
    PROCESS_CPU_RECORD: record,
    NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} ${RECORD_HOOK}`.trim(),
  }
  const result = spawnSync('npm', ['test'], {cwd: ROOT, env, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024})
  const wall = Number(process.hrtime.bigint() - start) / 1e9
  const cpu = childrenCpuSeconds() - cpuBefore
  const processes = fs.existsSync(record) ? readRecords(record) : []
  fs.rmSync(record, {force: true})
  const count = (word: string) => {
    const matches = [...result.stdout.matchAll(new RegExp(`^ *(\\d+) ${word}`, 'gm'))]
    // The last summary is the sharding check's; the first is the suite's.
    return matches.length > 0 ? Number(matches[0]![1]) : null
  }
  const passing = count('passing')
  // Mocha prints no "failing" line when nothing failed.
  const failing = count('failing') ?? (passing === null ? null : 0)
  const recorded = processes.reduce((sum, processCpu) => sum + processCpu.cpu_s, 0)
  return {wall_s: wall, cpu_s: cpu, passing, failing, exit_code: result.status, cpu_by_kind: cpuByKind(processes, ROOT), cpu_unrecorded_s: cpu - recorded}
}

function readRecords(file: string): ProcessCpu[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ProcessCpu)
}

const runs = Number(process.argv[2] ?? 1)
const startedAt = new Date()
const before = cpuTimes()
const floors = {node_startup_ms: startupFloorMs(), js_work_ms: jsFloorMs()}
const suite: SuiteRun[] = []
for (let i = 0; i < runs; i++) suite.push(runSuite())
const after = cpuTimes()

console.log(`floors: node -e 0 median ${floors.node_startup_ms.toFixed(1)} ms; fixed JavaScript work median ${floors.js_work_ms.toFixed(1)} ms`)
for (const run of suite) {
  console.log(
    `npm test: ${run.wall_s.toFixed(1)} s wall, ${run.cpu_s.toFixed(1)} s CPU, ${run.passing} passing, ${run.failing} failing (bar: under ${BAR_SECONDS} s)`,
  )
  const kinds = run.cpu_by_kind.slice(0, 8).map(({kind, processes, cpu_s}) => `${kind} ${cpu_s.toFixed(1)} s (${processes})`)
  console.log(`  CPU by process (count): ${kinds.join(', ')}; not recorded by a Node process ${run.cpu_unrecorded_s.toFixed(1)} s`)
}
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
