/**
 * Runs bench/webhooks.ts unchanged in a child process, prints its output as it comes, and keeps
 * its figures as data: bench/results/webhooks-<ISO 8601 basic time>.json, with the git commit, the
 * output's lines and the figures read from them (null where a line was not found).
 * Run: npm run bench:webhooks:record (the same environment as npm run bench:webhooks).
 */
import {spawn} from 'node:child_process'
import os from 'node:os'
import path from 'node:path'

import {ROOT} from './daemon-process.js'
import {checkoutCommit, writeResults} from './results-file.js'

const startedAt = new Date()
const loadAtStart = os.loadavg()
const child = spawn(process.execPath, [path.join(ROOT, 'dist/bench/webhooks.js')], {stdio: ['ignore', 'pipe', 'inherit']})
let output = ''
child.stdout.on('data', (chunk: Buffer) => {
  process.stdout.write(chunk)
  output += chunk.toString()
})
const exitCode = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))

const number = (pattern: RegExp): number | null => {
  const match = pattern.exec(output)
  return match ? Number(match[1]) : null
}
const result = {
  bench: 'webhooks',
  command: 'npm run bench:webhooks',
  started_at: startedAt.toISOString(),
  git_commit: checkoutCommit().commit,
  exit_code: exitCode,
  host: {cores: os.cpus().length, loadavg_at_start: loadAtStart, loadavg_at_end: os.loadavg(), node: process.version},
  figures: {
    latency_201_to_first_attempt_ms: {p50: number(/p50 ([\d.]+) ms/), p99: number(/p99 ([\d.]+) ms/), max: number(/max ([\d.]+) ms/)},
    worker_drain: {
      deliveries: number(/draining (\d+) deliveries/),
      seconds_spawn_to_empty: number(/deliveries: ([\d.]+) s from its spawn/),
      deliveries_per_second: number(/empty queue, (\d+) deliveries\/s/),
      seconds_first_to_last: number(/; ([\d.]+) s from the first delivery to the last/),
      first_to_last_per_second: number(/to the last, (\d+)\/s/),
    },
    floor: {posts_per_second: number(/: [\d.]+ s, (\d+) posts\/s/), worker_to_bare_percent: number(/worker\/bare (\d+)%/)},
    steal_percent: number(/\(steal\) during the run: ([\d.]+)%/),
  },
  output: output.trimEnd().split('\n'),
}
const file = writeResults('webhooks', startedAt, result)
console.log(`results: ${path.relative(process.cwd(), file)}`)
process.exitCode = exitCode ?? 1
