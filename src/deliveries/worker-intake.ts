import type {Logger} from '../log/logger.js'
import type {Clock} from '../shared/clock.js'
import type {ClaimedDelivery, DeliveryClaims} from './delivery-claims.js'
import type {DeliveryLeasesStore} from './delivery-leases-store.js'
import type {DispatchQueue} from './dispatch-queue.js'
import type {HeldWebhooks} from './held-webhooks.js'
import type {WebhookEntry, WorkerHoldings} from './worker-holdings.js'

/** Ids taken from the queue per read. */
const INTAKE_BATCH = 500
/** How long one read of the queue waits for ids. */
const QUEUE_WAIT_MS = 1000

interface IntakeParts {
  holdings: WorkerHoldings
  heldWebhooks: HeldWebhooks
  claims: DeliveryClaims
  leases: DeliveryLeasesStore
  queue: DispatchQueue
  clock: Clock
  logger: Logger
  /** Tells the dispatcher there is something new to send. */
  wake: () => void
}

/**
 * How deliveries come into a worker: ids read from the queue (and handed in by the sweeper,
 * process() and lane refills) are claimed and put in their webhooks' lanes, or back in the pool
 * past a lane's limit.
 */
export class WorkerIntake {
  private running = false
  /** Set once the worker stops: late claims (a refill, a sweep) must not take deliveries a stopped worker would strand. */
  private stopped = false
  private loop: Promise<void> | null = null
  /** The claim under way (see take). */
  private claiming: Promise<void> = Promise.resolve()

  constructor(
    private readonly parts: IntakeParts,
    private readonly options: {laneLimit: number; redispatchAfterMs: number},
  ) {}

  start(): void {
    this.running = true
    this.loop = this.readQueue()
  }

  /** Takes no more deliveries; resolves once the queue is closed and its last read handled. */
  async stop(): Promise<void> {
    this.running = false
    this.stopped = true
    await this.parts.queue.close()
    await this.loop
  }

  /**
   * Claims deliveries and puts them in their webhooks' lanes (or back in the pool past the lane's
   * limit). One claim at a time per worker: two in the same millisecond would share a lease end,
   * and each would read back the other's rows as its own.
   */
  take(ids: readonly string[]): Promise<void> {
    const taking = this.claiming.then(() => this.claimAndHold(ids))
    this.claiming = taking.catch(() => undefined)
    return taking
  }

  /**
   * Tops up a lane that is half drained from the deliveries it left in the database, at once
   * rather than at the next sweep, so a webhook with a long backlog drains at its cap.
   */
  refill(entry: WebhookEntry): void {
    const webhookId = entry.webhook.id
    if (!entry.parked || entry.refilling || this.parts.holdings.lanes.size(webhookId) > this.options.laneLimit / 2) return
    const room = this.parts.holdings.roomFor(webhookId)
    if (room <= 0) return
    entry.refilling = true
    const now = this.parts.clock.now()
    this.parts.leases
      .unheldOf(entry.webhook, now, now - this.options.redispatchAfterMs, room)
      .then(async (ids) => {
        if (ids.length < room) entry.parked = false
        await this.take(ids)
      })
      .catch((error: Error) => this.parts.logger.warn({err: error, webhook_id: webhookId}, 'refilling a lane failed; the sweeper takes its deliveries'))
      .finally(() => (entry.refilling = false))
  }

  private async readQueue(): Promise<void> {
    const {queue, logger} = this.parts
    while (this.running) {
      let ids: string[]
      try {
        ids = await queue.take(INTAKE_BATCH, QUEUE_WAIT_MS)
      } catch (error) {
        if (!this.running) break
        logger.warn({err: error}, 'delivery queue unavailable; retrying')
        await new Promise((resolve) => setTimeout(resolve, 1000))
        continue
      }
      if (ids.length === 0) continue
      try {
        await this.take(ids)
      } catch (error) {
        logger.error({err: error, deliveries: ids.length}, 'claiming deliveries failed; the sweeper will take them')
      }
      // Claimed (leased in the database) or not ours: either way the queue is done with them.
      queue.ack(ids).catch(() => undefined)
    }
  }

  private async claimAndHold(ids: readonly string[]): Promise<void> {
    if (this.stopped) return
    const {holdings, heldWebhooks, claims, clock, logger} = this.parts
    const claimed = await claims.claimMany(ids.filter((id) => !holdings.held.has(id)))
    const now = clock.now()
    const parked: string[] = []
    const spent: ClaimedDelivery[] = []
    for (const delivery of claimed) {
      const entry = heldWebhooks.entryFor(delivery)
      if (delivery.delivery.attemptsMade >= entry.webhook.retryAttempts + 1) spent.push(delivery)
      else if (holdings.roomFor(entry.webhook.id) <= 0) {
        parked.push(delivery.delivery.id)
        entry.parked = true
      } else holdings.hold(delivery, now)
    }
    if (parked.length > 0) {
      try {
        await claims.release(parked, 'keep due time')
      } catch (error) {
        // Still leased to this worker: held over the lane's limit rather than stranded until the lease lapses.
        logger.warn({err: error, deliveries: parked.length}, 'handing surplus deliveries back failed; this worker keeps them')
        for (const delivery of claimed.filter((each) => parked.includes(each.delivery.id))) holdings.hold(delivery, now)
      }
    }
    // A webhook's retry_attempts lowered below what a delivery already spent: nothing is left to send.
    for (const delivery of spent) await claims.finish(delivery.delivery.id, 'failed', delivery.delivery.lastError ?? 'no attempt left')
    this.parts.wake()
  }
}
