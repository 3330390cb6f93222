/**
 * Hands delivery ids from the process that wrote them to a worker. It only dispatches: the
 * database holds every delivery, and a worker's sweeper takes what a queue lost.
 */
export interface DispatchQueue {
  enqueue(ids: readonly string[]): Promise<void>
  /** Up to `max` ids, waiting at most `blockMs` for the first. */
  take(max: number, blockMs: number): Promise<string[]>
  /** Done with ids taken from this queue (claimed, so leased in the database, or not ours to deliver). */
  ack(ids: readonly string[]): Promise<void>
  /** Whether taking from this queue works right now (readiness reports a stalled dispatch loop). */
  health(): DispatchHealth
  close(): Promise<void>
}

/** Whether a queue's reads are failing: `failingSinceMs` is when they began to, null while they work. */
export interface DispatchHealth {
  failingSinceMs: number | null
  lastError: string | null
}

/**
 * In-process queue of the embedded default: the API and the worker share one process. It is
 * bounded: an API-only process has no reader, and a worker's sweeper takes whatever is dropped.
 */
export class MemoryQueue implements DispatchQueue {
  private readonly ids: string[] = []
  /** Every read waiting for ids: the daemon's worker, and any other worker of this process. */
  private readonly waiters = new Set<() => void>()

  constructor(private readonly capacity = 10_000) {}

  async enqueue(ids: readonly string[]): Promise<void> {
    this.ids.push(...ids)
    if (this.ids.length > this.capacity) this.ids.splice(0, this.ids.length - this.capacity)
    this.wakeAll()
  }

  async take(max: number, blockMs: number): Promise<string[]> {
    if (this.ids.length === 0 && blockMs > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          this.waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, blockMs)
        this.waiters.add(wake)
      })
    }
    return this.ids.splice(0, max)
  }

  async ack(): Promise<void> {}

  health(): DispatchHealth {
    return {failingSinceMs: null, lastError: null}
  }

  async close(): Promise<void> {
    this.wakeAll()
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake()
  }
}
