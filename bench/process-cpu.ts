/**
 * CPU time each process of a benchmark phase used (/proc/<pid>/stat), per unit of work: tells
 * whether a phase was bound by the machine's two cores (the processes' shares add up to about
 * 200%) or by waiting (they do not), and which process spent what. Linux only; elsewhere the
 * phase's line says it was not measured.
 */
import fs from 'node:fs'

/** Clock ticks per second of /proc's times: 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)). */
const TICKS_PER_SECOND = 100

/** A process's user + system CPU time so far, in ms, or null when it cannot be read. */
export function processCpuMs(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
  } catch {
    return null
  }
}

/** The pid of the first process whose command name is one of `names` (mariadbd, mysqld), or null. */
export function findProcess(names: readonly string[]): number | null {
  for (const entry of fs.existsSync('/proc') ? fs.readdirSync('/proc') : []) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (names.includes(fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim())) return Number(entry)
    } catch {
      // gone meanwhile
    }
  }
  return null
}

/** The database server's pid on this machine, when it runs here. */
export const databasePid = (): number | null => findProcess(['mariadbd', 'mysqld'])

/** Measures the named processes' CPU time from now until `stop`. */
export function meterCpu(processes: Record<string, number | null | undefined>): {stop(): CpuShares} {
  const started = performance.now()
  const before = Object.entries(processes).map(([name, pid]) => ({name, pid, at: pid ? processCpuMs(pid) : null}))
  return {
    stop() {
      const wallMs = performance.now() - started
      return {wallMs, processes: before.map(({name, pid, at}) => ({name, cpuMs: pid && at !== null ? (processCpuMs(pid) ?? at) - at : null}))}
    },
  }
}

export interface CpuShares {
  wallMs: number
  processes: Array<{name: string; cpuMs: number | null}>
}

/** One line: each process's share of one core over the phase and its CPU µs per unit of work. */
export function cpuSharesLine(label: string, shares: CpuShares, units: number, unit: string): string {
  const parts = shares.processes.map(({name, cpuMs}) =>
    cpuMs === null ? `${name} not measured` : `${name} ${((100 * cpuMs) / shares.wallMs).toFixed(0)}% (${((1000 * cpuMs) / units).toFixed(0)} µs/${unit})`,
  )
  const known = shares.processes.flatMap(({cpuMs}) => (cpuMs === null ? [] : [cpuMs]))
  const total = known.reduce((sum, ms) => sum + ms, 0)
  return `${label}: ${parts.join(', ')}; together ${((100 * total) / shares.wallMs).toFixed(0)}% of one core`
}
