import type {Logger} from '../log/logger.js'
import type {Clock} from '../shared/clock.js'
import {DEFAULT_MAX_IN_FLIGHT} from '../webhooks/webhook-types.js'
import type {CircuitBreakers} from './circuit-breaker.js'
import {REMOTE_CAP_RETRY_MS, type SlotExchange} from './slot-exchange.js'
import type {WorkerHoldings} from './worker-holdings.js'

/** How long the dispatcher lets ended attempts gather before it refills their slots (see wakeSoon). */
const COALESCE_MS = 2
/** The longest the dispatcher sleeps without being woken. */
const IDLE_WAKE_MS = 1000
/**
 * The worker's slots kept back for customers with nothing on the wire: a quarter. Customers whose
 * receivers hang (20 webhooks at 8 in flight each would be 160 attempts, each held for a timeout
 * of up to 60 s) fill at most the other three quarters however many of them there are, and a
 * customer with no attempt out always finds a slot for its next one.
 */
const RESERVE_FRACTION = 4

interface DispatcherParts {
  holdings: WorkerHoldings
  breakers: CircuitBreakers
  slots: SlotExchange
  clock: Clock
  logger: Logger
}

/**
 * A worker's dispatcher: sends from the lanes while slots are free, round-robin across webhooks,
 * within the worker's slots (`concurrency`), each webhook's in-flight cap and its circuit breaker,
 * and each customer's share of the slots (see RESERVE_FRACTION).
 */
export class WorkerDispatcher {
  private dispatching = false
  private loop: Promise<void> | null = null
  private wakeUp: (() => void) | null = null
  private coalescing: NodeJS.Timeout | null = null

  constructor(
    private readonly parts: DispatcherParts,
    /** Attempts on the wire at once, across every webhook. */
    private readonly concurrency: number,
  ) {}

  /** Starts the dispatch loop unless it runs. */
  ensureRunning(): void {
    if (this.dispatching) return
    this.dispatching = true
    this.loop = this.run().catch((error: Error) => this.parts.logger.error({err: error}, 'the delivery dispatcher stopped unexpectedly'))
  }

  /** Ends the dispatch loop; resolves once its last round is done. */
  async stop(): Promise<void> {
    this.dispatching = false
    if (this.coalescing) clearTimeout(this.coalescing)
    this.wake()
    await this.loop
    this.loop = null
  }

  /** Wakes the dispatcher at once: new deliveries, a breaker's decision, a refreshed webhook. */
  wake(): void {
    this.wakeUp?.()
  }

  /**
   * Wakes the dispatcher within COALESCE_MS: attempts ending together then free their slots and
   * refill them in one exchange per webhook, not one each (an exchange is a Redis round trip).
   */
  wakeSoon(): void {
    if (this.coalescing) return
    this.coalescing = setTimeout(() => {
      this.coalescing = null
      this.wake()
    }, COALESCE_MS)
  }

  /**
   * Sends from the lanes while slots are free: picks round-robin across webhooks within each
   * one's allowance, takes their in-flight slots in one exchange per webhook (which also frees
   * the slots of attempts that ended), and sends what was granted. Sleeps until woken by new
   * deliveries, an ended attempt, a breaker's probe, or the next retry falling due.
   */
  private async run(): Promise<void> {
    const {holdings, slots, clock} = this.parts
    while (this.dispatching) {
      const now = clock.now()
      holdings.lanes.releaseDue(now)
      const free = this.concurrency - holdings.onTheWire
      const picked = free > 0 ? this.pickFairly(free, now) : []
      if (picked.length === 0 && !this.hasSlotsToRelease(now)) {
        await this.sleep(now)
        continue
      }
      await slots.exchangeAndSend(picked, now)
    }
  }

  /**
   * Picks up to `free` deliveries round-robin across webhooks, each within its allowance and its
   * customer's: any free slot above the reserve, and one of the reserve for a customer with
   * nothing on the wire. Slots are promised to a webhook when it is first asked (the lanes ask
   * once per pick), so a customer's webhooks together stay within it.
   */
  private pickFairly(free: number, now: number): ReturnType<WorkerHoldings['lanes']['pick']> {
    const {holdings} = this.parts
    const reserve = Math.floor(this.concurrency / RESERVE_FRACTION)
    /** Slots promised to each customer in this pick. */
    const promisedTo = new Map<string, number>()
    let promised = 0
    return holdings.lanes.pick(free, (webhookId) => {
      const room = this.allowance(webhookId, now)
      const customerId = holdings.webhooks.get(webhookId)?.webhook.customerId
      if (room <= 0 || customerId === undefined) return room
      const held = (holdings.customersOnTheWire.get(customerId) ?? 0) + (promisedTo.get(customerId) ?? 0)
      const spare = free - promised
      const granted = Math.max(0, Math.min(room, spare, Math.max(held === 0 ? 1 : 0, spare - reserve)))
      promisedTo.set(customerId, (promisedTo.get(customerId) ?? 0) + granted)
      promised += granted
      return granted
    })
  }

  /** Whether attempts ended whose in-flight slots an exchange can free now. */
  private hasSlotsToRelease(now: number): boolean {
    for (const entry of this.parts.holdings.webhooks.values()) if (entry.done.length > 0 && entry.blockedUntil <= now) return true
    return false
  }

  /** How many more of a webhook's deliveries may go out now. */
  private allowance(webhookId: string, now: number): number {
    const entry = this.parts.holdings.webhooks.get(webhookId)
    if (!entry || entry.blockedUntil > now) return 0
    const gate = this.parts.breakers.gate(entry.webhook, now)
    if (gate === 'hold') return 0
    const room = (entry.webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT) - entry.onTheWire
    return gate === 'probe' ? Math.min(1, room) : room
  }

  /** Sleeps until woken, or until the next retry, breaker probe or remote slot is due. */
  private async sleep(now: number): Promise<void> {
    const {lanes, webhooks} = this.parts.holdings
    let wakeAt = Math.min(lanes.nextDueAt() ?? Infinity, now + IDLE_WAKE_MS)
    for (const webhookId of lanes.webhooksWithDue()) {
      const entry = webhooks.get(webhookId)
      if (!entry) continue
      if (entry.blockedUntil > now) wakeAt = Math.min(wakeAt, entry.blockedUntil)
      else if (entry.webhook.breaker.state !== 'closed') wakeAt = Math.min(wakeAt, Math.max(now + REMOTE_CAP_RETRY_MS, entry.webhook.breaker.until ?? 0))
    }
    for (const entry of webhooks.values()) if (entry.done.length > 0) wakeAt = Math.min(wakeAt, entry.blockedUntil)
    if (!this.dispatching) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, wakeAt - now))
      // A worker driven only by process() (tests, a rescue) must not keep its process alive.
      timer.unref()
      this.wakeUp = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    this.wakeUp = null
  }
}
