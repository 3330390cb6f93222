/**
 * Loaded into every Node process of a timed `npm test` (NODE_OPTIONS --import, set by
 * test-suite.ts): as it exits, a process appends its own CPU time and what it ran to the file
 * PROCESS_CPU_RECORD names, so the bench can say which kinds of process the suite's CPU goes to
 * (process-kinds.ts). A process killed by a signal it does not handle writes nothing.
 */
import fs from 'node:fs'

import type {ProcessCpu} from './process-kinds.js'

const file = process.env['PROCESS_CPU_RECORD']
if (file) {
  process.once('exit', () => {
    const usage = process.resourceUsage()
    const record: ProcessCpu = {argv: process.argv.slice(1, 3), cpu_s: (usage.userCPUTime + usage.systemCPUTime) / 1e6}
    fs.appendFileSync(file, `${JSON.stringify(record)}\n`)
  })
}
