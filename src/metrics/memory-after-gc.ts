import {constants, type PerformanceEntry, PerformanceObserver} from 'node:perf_hooks'
import v8 from 'node:v8'

/**
 * The process's memory right after its latest full (major) garbage collection: what a leak
 * raises. Heap and RSS in between swing by a quarter with the collector's rhythm (a sawtooth of
 * minutes under load), so only their values after a full collection compare over time.
 * Process-wide, like the collector: one observer however many daemons a process runs.
 */
interface MemoryAfterGc {
  /** Bytes of live JavaScript heap after the latest major collection; null before the first. */
  heapUsed: number | null
  /** Resident set size in bytes at that moment. */
  rss: number | null
  /** How many major collections the observer has seen. */
  collections: number
}

const latest: MemoryAfterGc = {heapUsed: null, rss: null, collections: 0}
let observer: PerformanceObserver | null = null

/** Starts observing (once per process) and returns the live figures. */
export function memoryAfterMajorGc(): Readonly<MemoryAfterGc> {
  if (!observer) {
    observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if ((entry as PerformanceEntry & {detail?: {kind?: number}}).detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue
        latest.heapUsed = v8.getHeapStatistics().used_heap_size
        latest.rss = process.memoryUsage.rss()
        latest.collections++
      }
    })
    observer.observe({entryTypes: ['gc']})
  }
  return latest
}
