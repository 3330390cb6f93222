/**
 * How much CPU time the hypervisor took from this virtual machine (the `steal` column of
 * /proc/stat) while a benchmark ran. On a shared host it swings from 0 to a quarter of the time
 * within minutes, and every process here slows with it, the floors too: a figure taken while it
 * is high is not a quiet-machine figure, whatever the machine's own load.
 */
import fs from 'node:fs'

export interface CpuTimes {
  steal: number
  total: number
}

/** The machine's CPU time so far (all cores, in clock ticks), or null where /proc/stat is missing. */
export function cpuTimes(): CpuTimes | null {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    // user nice system idle iowait irq softirq steal (guest time is counted inside user already)
    return {steal: fields[7] ?? 0, total: fields.slice(0, 8).reduce((sum, value) => sum + value, 0)}
  } catch {
    return null
  }
}

/** The percentage of CPU time stolen between two readings, or null where it was not measured. */
export function stealPercent(before: CpuTimes | null, after: CpuTimes | null): number | null {
  if (!before || !after || after.total === before.total) return null
  return (100 * (after.steal - before.steal)) / (after.total - before.total)
}

/** The share of CPU time stolen between two readings, as a sentence for a benchmark's output. */
export function stealReport(before: CpuTimes | null, after: CpuTimes | null): string {
  const share = stealPercent(before, after)
  if (share === null) return 'CPU time taken by the host (steal): not measured here'
  return `CPU time taken by the host (steal) during the run: ${share.toFixed(1)}%${share > 2 ? ' (above 2%: not a quiet-machine figure)' : ''}`
}
