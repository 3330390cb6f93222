import type {Logger} from '../log/logger.js'
import type {Clock} from '../shared/clock.js'
import type {DeliveryLeasesStore} from './delivery-leases-store.js'

/** Deliveries taken per sweep at most; the next sweep takes more. */
const DELIVERIES_PER_SWEEP = 2000
/** Deliveries of one webhook taken per sweep at most: its lane refills itself as it drains. */
const DELIVERIES_PER_WEBHOOK = 500

/** What the sweeper needs of its worker: room in a webhook's lane, and a way to take deliveries. */
interface SweptInto {
  roomFor(webhookId: string): number
  take(deliveryIds: string[]): Promise<void>
}

/**
 * Finds the deliveries no worker will take (a worker that died holding leases, one that stopped
 * or parked them, a queue that lost them, a redelivery) and gives them to its own worker, a share
 * per webhook. What a live worker holds, waiting its turn or backing off, is leased and left
 * alone. The database is the record; this is what makes Redis only a dispatcher.
 */
export class DeliverySweeper {
  private timer: NodeJS.Timeout | null = null
  private sweeping = false

  constructor(
    private readonly leases: DeliveryLeasesStore,
    private readonly worker: SweptInto,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** A pending delivery dispatched longer ago than this and never taken is taken here. */
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

  /** Takes the deliveries left behind; returns how many it found. */
  async sweep(): Promise<number> {
    const now = this.clock.now()
    const lostBefore = now - this.redispatchAfterMs
    await this.leases.releaseExpiredLeases(now)
    const room = new Map<string, number>()
    const ids: string[] = []
    for (const {id, webhookId} of await this.leases.unheld(now, lostBefore, DELIVERIES_PER_WEBHOOK, DELIVERIES_PER_SWEEP)) {
      const left = room.get(webhookId) ?? this.worker.roomFor(webhookId)
      room.set(webhookId, left - 1)
      if (left > 0) ids.push(id)
    }
    if (ids.length > 0) await this.worker.take(ids)
    return ids.length
  }
}
