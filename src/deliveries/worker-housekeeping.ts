import type {Logger} from '../log/logger.js'
import type {DeliveryClaims} from './delivery-claims.js'
import type {HeldWebhooks} from './held-webhooks.js'
import {SLOT_RENEW_MS, type SlotExchange} from './slot-exchange.js'
import type {WorkerHoldings} from './worker-holdings.js'

interface HousekeepingParts {
  holdings: WorkerHoldings
  heldWebhooks: HeldWebhooks
  claims: DeliveryClaims
  slots: SlotExchange
  logger: Logger
}

/**
 * A worker's timers, each running one round at a time: the heartbeat that renews its leases,
 * the refresh of the webhooks it holds deliveries of, and the renewal of its in-flight slots.
 */
export class WorkerHousekeeping {
  private readonly timers: NodeJS.Timeout[] = []

  constructor(private readonly parts: HousekeepingParts) {}

  start(intervals: {heartbeatMs: number; refreshMs: number}): void {
    this.every(intervals.heartbeatMs, () => this.renewLeases())
    this.every(intervals.refreshMs, () => this.parts.heldWebhooks.refresh())
    this.every(SLOT_RENEW_MS, () => this.parts.slots.renew())
  }

  stop(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer)
  }

  /** The heartbeat: renews every lease this worker holds; drops what it lost (cancelled, redelivered, taken over). */
  private async renewLeases(): Promise<void> {
    const {holdings} = this.parts
    const lost = await this.parts.claims.renewAll([...holdings.held.keys()])
    for (const id of lost) {
      const held = holdings.held.get(id)
      if (held) holdings.lanes.remove(id, held.webhookId)
      holdings.letGo(id)
    }
  }

  private every(intervalMs: number, work: () => Promise<void>): void {
    let busy = false
    const timer = setInterval(() => {
      if (busy) return
      busy = true
      work()
        .catch((error: Error) => this.parts.logger.warn({err: error}, 'delivery worker housekeeping failed; the next round tries again'))
        .finally(() => (busy = false))
    }, intervalMs)
    timer.unref()
    this.timers.push(timer)
  }
}
