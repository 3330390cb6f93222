import type {Logger} from '../log/logger.js'
import type {Clock} from '../shared/clock.js'
import type {DeliveriesStore} from './deliveries-store.js'
import type {DispatchQueue} from './dispatch-queue.js'

const SWEEP_BATCH = 500

/**
 * Finds deliveries that no queue will hand out (an enqueue that failed, a flushed Redis, a
 * worker that died holding a lease, a redelivery) and dispatches them again. The database is
 * the record; this is what makes Redis only a dispatcher.
 */
export class DeliverySweeper {
  private timer: NodeJS.Timeout | null = null
  private sweeping = false

  constructor(
    private readonly deliveries: DeliveriesStore,
    private readonly queue: DispatchQueue,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** A pending delivery dispatched longer ago than this is dispatched again. */
    private readonly redispatchAfterMs: number,
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      // One sweep at a time: a slow database must not pile sweeps up.
      if (this.sweeping) return
      this.sweeping = true
      this.sweep()
        .catch((error: Error) => this.logger.warn({err: error}, 'delivery sweep failed'))
        .finally(() => (this.sweeping = false))
    }, intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** Re-dispatches deliveries left behind; returns how many. */
  async sweep(): Promise<number> {
    const now = this.clock.now()
    await this.deliveries.releaseExpiredLeases(now)
    const ids = await this.deliveries.takeUndispatched(now, now - this.redispatchAfterMs, SWEEP_BATCH)
    if (ids.length > 0) await this.queue.enqueue(ids)
    return ids.length
  }
}
