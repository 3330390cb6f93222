import {randomUUID} from 'node:crypto'
import os from 'node:os'

import type {Db} from '../db/knex.js'
import type {EventsStore} from '../events/events-store.js'
import type {Logger} from '../log/logger.js'
import type {Metrics} from '../metrics/metrics.js'
import {type Clock, systemClock} from '../shared/clock.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import {DEFAULT_MAX_IN_FLIGHT} from '../webhooks/webhook-types.js'
import {WebhookHealth} from '../webhooks/webhook-health.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import {AttemptLog} from './attempt-log.js'
import {attemptOutcome, describeResult} from './attempt-outcome.js'
import {type BreakerOptions, CircuitBreakers} from './circuit-breaker.js'
import type {DeliveriesStore} from './deliveries-store.js'
import {type ClaimedDelivery, DeliveryClaims, LEASE_MS, type SendingWebhook} from './delivery-claims.js'
import {DeliverySweeper} from './delivery-sweeper.js'
import type {DispatchQueue} from './dispatch-queue.js'
import type {InFlightSlots} from './in-flight-slots.js'
import {retryDelayMs} from './retry-delay.js'
import type {DeliverySender, SendResult} from './sender.js'
import {signedRequest} from './signed-request.js'
import {type LaneItem, WebhookLanes} from './webhook-lanes.js'

export interface WorkerOptions {
  /** Attempts on the wire at once, across every webhook. */
  concurrency?: number
  /** First retry delay; doubles per failed attempt with jitter, capped at maxDelayMs (the spec: 30 s). */
  baseDelayMs?: number
  maxDelayMs?: number
  /** How often the sweeper looks for deliveries no worker will take. */
  sweepIntervalMs?: number
  /** A pending delivery dispatched longer ago than this and never taken counts as lost by its queue. */
  redispatchAfterMs?: number
  /** How often the worker renews the leases it holds (default a third of the lease). */
  heartbeatMs?: number
  /** How often it reads again the webhooks it holds deliveries of (secret, settings, breaker, deletion). */
  refreshMs?: number
  /** Deliveries of one webhook this worker holds at most; more are left to the sweeper until there is room. */
  laneLimit?: number
  breaker?: BreakerOptions
  workerId?: string
  clock?: Clock
}

interface Dependencies {
  db: Db
  deliveries: DeliveriesStore
  webhooks: WebhooksStore
  events: EventsStore
  secrets: SecretBox
  sender: DeliverySender
  queue: DispatchQueue
  inFlight: InFlightSlots
  logger: Logger
  metrics?: Metrics
}

/** deliveries.claimed_by holds 64 characters; a host name alone may take 64. */
export const WORKER_ID_MAX_LENGTH = 64

/** host:pid:random, the host name shortened so the whole fits claimed_by. */
export function defaultWorkerId(hostname = os.hostname()): string {
  const suffix = `:${process.pid}:${randomUUID().slice(0, 8)}`
  return hostname.slice(0, WORKER_ID_MAX_LENGTH - suffix.length) + suffix
}

/** Ids taken from the queue per read. */
const INTAKE_BATCH = 500
/** Deliveries one worker holds at most, across every webhook: past it, new ones wait in the database. */
const MAX_HELD = 50_000
/** How soon a webhook whose in-flight cap other workers filled is asked again. */
const REMOTE_CAP_RETRY_MS = 50
/**
 * How long an in-flight slot lasts unless its worker renews it (every SLOT_RENEW_MS while the
 * attempt is on the wire): a worker that dies frees its webhooks' slots within this, so the
 * other workers go on sending to them.
 */
const SLOT_LEASE_MS = 5000
const SLOT_RENEW_MS = 1500
/** How long the dispatcher lets ended attempts gather before it refills their slots (see wakeSoon). */
const COALESCE_MS = 2
/** The longest the dispatcher sleeps without being woken. */
const IDLE_WAKE_MS = 1000

/** A delivery this worker holds: in its webhook's lane, scheduled for a retry, or on the wire. */
interface Held extends LaneItem {
  claimed: ClaimedDelivery
  attemptsMade: number
  /** The number the next attempt is recorded with (a redelivered delivery keeps its earlier attempts). */
  nextAttemptNumber: number
}

/** A webhook this worker holds deliveries of: as last read, and its deliveries on the wire. */
interface WebhookEntry extends SendingWebhook {
  /** Deliveries picked for the wire, counted from the pick (see exchangeAndSend). */
  onTheWire: number
  /** Deliveries whose attempt is on the wire: their in-flight slots are renewed until it ends. */
  wire: Set<string>
  /** Deliveries whose attempt ended, their in-flight slots to release with the next exchange. */
  done: string[]
  /** Until when other workers hold its whole cap (see REMOTE_CAP_RETRY_MS). */
  blockedUntil: number
  /** Some of its deliveries were left in the database for want of room: the lane refills from there as it drains. */
  parked: boolean
  refilling: boolean
}

/**
 * The delivery worker. It takes delivery ids from the queue (and from its sweeper), claims them,
 * and keeps them in a lane per webhook; its dispatcher sends from the lanes round-robin, within
 * the worker's slots, each webhook's in-flight cap (shared by every worker) and its circuit
 * breaker. An attempt holds a slot only while it is on the wire: a failed one is recorded with
 * its next attempt's due time and waits in the lane for it, so one dead receiver never holds the
 * slots another webhook needs (docs/api.md, "Delivery scheduling").
 */
export class DeliveryWorker {
  private readonly options: Required<Omit<WorkerOptions, 'clock' | 'breaker'>>
  private readonly clock: Clock
  private readonly claims: DeliveryClaims
  private readonly attempts: AttemptLog
  private readonly health: WebhookHealth
  private readonly sweeper: DeliverySweeper
  private readonly breakers: CircuitBreakers
  private readonly lanes = new WebhookLanes<Held>()
  private readonly held = new Map<string, Held>()
  private readonly webhooks = new Map<string, WebhookEntry>()
  private readonly sending = new Set<Promise<void>>()
  /** Callers of process() waiting for a delivery to leave this worker. */
  private readonly leaving = new Map<string, Array<() => void>>()
  private onTheWire = 0
  private running = false
  private dispatching = false
  /** Set once stop() begins: late claims (a refill, a sweep) must not take deliveries a stopped worker would strand. */
  private stopped = false
  private intakeLoop: Promise<void> | null = null
  private dispatchLoop: Promise<void> | null = null
  private wakeDispatcher: (() => void) | null = null
  private readonly timers: NodeJS.Timeout[] = []
  private coalescing: NodeJS.Timeout | null = null
  /** The claim under way (see take). */
  private claiming: Promise<void> = Promise.resolve()

  constructor(
    private readonly deps: Dependencies,
    options: WorkerOptions = {},
  ) {
    this.clock = options.clock ?? systemClock
    this.options = {
      concurrency: options.concurrency ?? 64,
      baseDelayMs: options.baseDelayMs ?? 1000,
      maxDelayMs: options.maxDelayMs ?? 30_000,
      sweepIntervalMs: options.sweepIntervalMs ?? 2000,
      redispatchAfterMs: options.redispatchAfterMs ?? 10_000,
      heartbeatMs: options.heartbeatMs ?? LEASE_MS / 3,
      refreshMs: options.refreshMs ?? 1000,
      laneLimit: options.laneLimit ?? 10_000,
      workerId: options.workerId ?? defaultWorkerId(),
    }
    const {db, deliveries, webhooks, events, secrets, logger, metrics} = deps
    this.claims = new DeliveryClaims(db, deliveries.leases, webhooks, events, secrets, this.clock, this.options.workerId)
    this.attempts = new AttemptLog(db, deliveries.attempts, webhooks, this.options.workerId, this.clock)
    this.health = new WebhookHealth(webhooks, this.clock, logger)
    this.breakers = new CircuitBreakers(webhooks, logger, () => this.wake(), metrics, options.breaker)
    this.sweeper = new DeliverySweeper(
      deliveries.leases,
      {roomFor: (id) => this.roomFor(id), take: (ids) => this.take(ids)},
      this.clock,
      logger,
      this.options.redispatchAfterMs,
    )
    metrics?.reportWorkerStates(() => this.states())
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.intakeLoop = this.runIntake()
    this.ensureDispatching()
    this.sweeper.start(this.options.sweepIntervalMs)
    this.every(this.options.heartbeatMs, () => this.renewLeases())
    this.every(this.options.refreshMs, () => this.refreshWebhooks())
    this.every(SLOT_RENEW_MS, () => this.renewSlots())
  }

  /**
   * Stops taking work. Attempts on the wire finish and are recorded; every other delivery this
   * worker holds goes back to the pool at once, due now, for the next worker (or this one restarted).
   */
  async stop(): Promise<void> {
    this.running = false
    this.stopped = true
    this.sweeper.stop()
    for (const timer of this.timers.splice(0)) clearInterval(timer)
    await this.deps.queue.close()
    await this.intakeLoop
    this.dispatching = false
    if (this.coalescing) clearTimeout(this.coalescing)
    this.wake()
    await this.dispatchLoop
    this.dispatchLoop = null
    await Promise.allSettled([...this.sending])
    const waiting = this.lanes.drainAll()
    await this.claims
      .release(
        waiting.map((held) => held.id),
        'due now',
      )
      .catch((error: Error) => this.deps.logger.warn({err: error}, 'handing deliveries back failed; their leases lapse instead'))
    for (const held of waiting) this.letGo(held.id)
    await this.releaseSlots().catch(() => undefined)
    this.deps.sender.close()
  }

  /** Takes the deliveries no worker will (see DeliverySweeper); returns how many it found. Runs on a timer, callable from tests. */
  async sweep(): Promise<number> {
    return this.sweeper.sweep()
  }

  /** Claims one delivery and sends it if this worker can; resolves once this worker has let it go. */
  async process(deliveryId: string): Promise<void> {
    this.ensureDispatching()
    const gone = new Promise<void>((resolve) => this.leaving.set(deliveryId, [...(this.leaving.get(deliveryId) ?? []), resolve]))
    await this.take([deliveryId])
    if (!this.held.has(deliveryId)) this.letGo(deliveryId)
    await gone
  }

  /**
   * Claims deliveries and puts them in their webhooks' lanes (or back in the pool past the lane's
   * limit). One claim at a time per worker: two in the same millisecond would share a lease end,
   * and each would read back the other's rows as its own.
   */
  private take(ids: readonly string[]): Promise<void> {
    const taking = this.claiming.then(() => this.claimAndHold(ids))
    this.claiming = taking.catch(() => undefined)
    return taking
  }

  private async claimAndHold(ids: readonly string[]): Promise<void> {
    if (this.stopped) return
    const claimed = await this.claims.claimMany(ids.filter((id) => !this.held.has(id)))
    const now = this.clock.now()
    const parked: string[] = []
    const spent: ClaimedDelivery[] = []
    for (const delivery of claimed) {
      const entry = this.entryFor(delivery)
      if (delivery.delivery.attemptsMade >= entry.webhook.retryAttempts + 1) spent.push(delivery)
      else if (this.roomFor(entry.webhook.id) <= 0) {
        parked.push(delivery.delivery.id)
        entry.parked = true
      } else this.hold(delivery, now)
    }
    if (parked.length > 0) {
      try {
        await this.claims.release(parked, 'keep due time')
      } catch (error) {
        // Still leased to this worker: held over the lane's limit rather than stranded until the lease lapses.
        this.deps.logger.warn({err: error, deliveries: parked.length}, 'handing surplus deliveries back failed; this worker keeps them')
        for (const delivery of claimed.filter((each) => parked.includes(each.delivery.id))) this.hold(delivery, now)
      }
    }
    // A webhook's retry_attempts lowered below what a delivery already spent: nothing is left to send.
    for (const delivery of spent) await this.claims.finish(delivery.delivery.id, 'failed', delivery.delivery.lastError ?? 'no attempt left')
    this.wake()
  }

  /** Puts a claimed delivery in its webhook's lane, due at its next attempt. */
  private hold(delivery: ClaimedDelivery, now: number): void {
    const held: Held = {
      id: delivery.delivery.id,
      webhookId: delivery.webhook.id,
      claimed: delivery,
      attemptsMade: delivery.delivery.attemptsMade,
      nextAttemptNumber: delivery.priorAttempts + 1,
    }
    this.held.set(held.id, held)
    this.lanes.add(held, delivery.delivery.nextAttemptAt, now)
  }

  /** Room in a webhook's lane for more deliveries; none once the worker holds MAX_HELD. */
  private roomFor(webhookId: string): number {
    if (this.held.size >= MAX_HELD) return 0
    return this.options.laneLimit - this.lanes.size(webhookId) - (this.webhooks.get(webhookId)?.onTheWire ?? 0)
  }

  /** The webhook's entry, made or brought up to date from what a claim just read (claims leave out inactive webhooks). */
  private entryFor(claimed: ClaimedDelivery): WebhookEntry {
    const entry = this.webhooks.get(claimed.webhook.id)
    if (!entry) {
      const made: WebhookEntry = {
        webhook: claimed.webhook,
        secrets: claimed.secrets,
        onTheWire: 0,
        wire: new Set(),
        done: [],
        blockedUntil: 0,
        parked: false,
        refilling: false,
      }
      this.webhooks.set(made.webhook.id, made)
      return made
    }
    if (entry.webhook.updatedAt !== claimed.webhook.updatedAt || entry.secrets.previous !== claimed.secrets.previous) void this.apply(entry, claimed)
    return entry
  }

  private async runIntake(): Promise<void> {
    while (this.running) {
      let ids: string[]
      try {
        ids = await this.deps.queue.take(INTAKE_BATCH, IDLE_WAKE_MS)
      } catch (error) {
        if (!this.running) break
        this.deps.logger.warn({err: error}, 'delivery queue unavailable; retrying')
        await new Promise((resolve) => setTimeout(resolve, 1000))
        continue
      }
      if (ids.length === 0) continue
      try {
        await this.take(ids)
      } catch (error) {
        this.deps.logger.error({err: error, deliveries: ids.length}, 'claiming deliveries failed; the sweeper will take them')
      }
      // Claimed (leased in the database) or not ours: either way the queue is done with them.
      this.deps.queue.ack(ids).catch(() => undefined)
    }
  }

  private ensureDispatching(): void {
    if (this.dispatching) return
    this.dispatching = true
    this.dispatchLoop = this.runDispatch().catch((error: Error) => this.deps.logger.error({err: error}, 'the delivery dispatcher stopped unexpectedly'))
  }

  private wake(): void {
    this.wakeDispatcher?.()
  }

  /**
   * Wakes the dispatcher within COALESCE_MS: attempts ending together then free their slots and
   * refill them in one exchange per webhook, not one each (an exchange is a Redis round trip).
   */
  private wakeSoon(): void {
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
  private async runDispatch(): Promise<void> {
    while (this.dispatching) {
      const now = this.clock.now()
      this.lanes.releaseDue(now)
      const free = this.options.concurrency - this.onTheWire
      const picked = free > 0 ? this.lanes.pick(free, (webhookId) => this.allowance(webhookId, now)) : []
      if (picked.length === 0 && !this.hasSlotsToRelease(now)) {
        await this.sleep(now)
        continue
      }
      await this.exchangeAndSend(picked, now)
    }
  }

  /** Whether attempts ended whose in-flight slots an exchange can free now. */
  private hasSlotsToRelease(now: number): boolean {
    for (const entry of this.webhooks.values()) if (entry.done.length > 0 && entry.blockedUntil <= now) return true
    return false
  }

  /** How many more of a webhook's deliveries may go out now. */
  private allowance(webhookId: string, now: number): number {
    const entry = this.webhooks.get(webhookId)
    if (!entry || entry.blockedUntil > now) return 0
    const gate = this.breakers.gate(entry.webhook, now)
    if (gate === 'hold') return 0
    const room = (entry.webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT) - entry.onTheWire
    return gate === 'probe' ? Math.min(1, room) : room
  }

  private async exchangeAndSend(picked: Held[], now: number): Promise<void> {
    const byWebhook = new Map<string, Held[]>()
    for (const held of picked) {
      const wanted = byWebhook.get(held.webhookId)
      if (wanted) wanted.push(held)
      else byWebhook.set(held.webhookId, [held])
    }
    for (const [webhookId, entry] of this.webhooks)
      if (entry.done.length > 0 && entry.blockedUntil <= now && !byWebhook.has(webhookId)) byWebhook.set(webhookId, [])
    // Counted on the wire while the exchange is out, so nothing else is picked into the same room.
    for (const held of picked) this.sentOut(held.webhookId, +1)
    await Promise.all(
      [...byWebhook].map(async ([webhookId, wanted]) => {
        const entry = this.webhooks.get(webhookId)!
        const done = entry.done.splice(0)
        let granted: Set<string>
        try {
          const cap = entry.webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
          granted = new Set(
            await this.deps.inFlight.exchange(
              entry.webhook,
              cap,
              done,
              wanted.map((held) => held.id),
              now + SLOT_LEASE_MS,
              now,
            ),
          )
        } catch (error) {
          // Released with the next exchange, which waits like a refused one does.
          entry.done.push(...done)
          entry.blockedUntil = this.clock.now() + REMOTE_CAP_RETRY_MS
          granted = new Set()
          this.deps.logger.warn({err: error, webhook_id: webhookId}, 'the in-flight record did not answer; trying again shortly')
        }
        const refused = wanted.filter((held) => !granted.has(held.id))
        if (refused.length > 0) {
          entry.blockedUntil = this.clock.now() + REMOTE_CAP_RETRY_MS
          this.sentOut(webhookId, -refused.length)
          if (this.breakers.gate(entry.webhook, now) === 'probe') this.breakers.probeUnused(entry.webhook)
          this.lanes.restore(refused)
          this.lanes.putBack(refused)
        }
        for (const held of wanted) {
          if (!granted.has(held.id)) continue
          entry.wire.add(held.id)
          this.send(held, entry)
        }
        this.refill(entry)
      }),
    )
  }

  /**
   * Tops up a lane that is half drained from the deliveries it left in the database, at once
   * rather than at the next sweep, so a webhook with a long backlog drains at its cap.
   */
  private refill(entry: WebhookEntry): void {
    const webhookId = entry.webhook.id
    if (!entry.parked || entry.refilling || this.lanes.size(webhookId) > this.options.laneLimit / 2) return
    const room = this.roomFor(webhookId)
    if (room <= 0) return
    entry.refilling = true
    const now = this.clock.now()
    this.deps.deliveries.leases
      .unheldOf(entry.webhook, now, now - this.options.redispatchAfterMs, room)
      .then(async (ids) => {
        if (ids.length < room) entry.parked = false
        await this.take(ids)
      })
      .catch((error: Error) => this.deps.logger.warn({err: error, webhook_id: webhookId}, 'refilling a lane failed; the sweeper takes its deliveries'))
      .finally(() => (entry.refilling = false))
  }

  private sentOut(webhookId: string, change: number): void {
    this.onTheWire += change
    this.webhooks.get(webhookId)!.onTheWire += change
  }

  private send(held: Held, entry: WebhookEntry): void {
    if (entry.webhook.breaker.state === 'half_open') this.breakers.probeSent(entry.webhook.id, held.id)
    const task: Promise<void> = this.attempt(held, entry)
      .catch((error: Error) => {
        // Not renewed any more: the lease lapses and a sweeper hands the delivery out again.
        this.letGo(held.id)
        this.deps.logger.error({err: error, delivery_id: held.id}, 'delivery attempt failed unexpectedly; its lease lapses and another worker retries it')
      })
      .finally(() => this.sending.delete(task))
    this.sending.add(task)
  }

  /** One attempt: signed with the webhook's secret as it stands now, sent, recorded, then ended or scheduled again. */
  private async attempt(held: Held, entry: WebhookEntry): Promise<void> {
    const {delivery, event} = held.claimed
    const startedAt = this.clock.now()
    if (held.nextAttemptNumber === 1) this.deps.metrics?.firstAttemptDelay.observe(Math.max(0, startedAt - delivery.createdAt) / 1000)
    let result: SendResult
    try {
      // A retry reads its webhook again first: the secret, URL and settings as they are now, and whether it still exists.
      if (held.attemptsMade > 0) {
        const latest = (await this.claims.currentWebhooks([entry.webhook.id])).get(entry.webhook.id)
        if (!(await this.apply(entry, latest))) {
          this.letGo(held.id)
          await this.claims.settle([held.id], 'cancelled', latest ? 'webhook disabled' : 'webhook deleted')
          return
        }
      }
      result = await this.deps.sender.send(signedRequest(entry.webhook, entry.secrets, event, delivery.id, startedAt))
    } finally {
      // The slot frees as soon as the receiver is done, before the attempt is recorded.
      this.sentOut(entry.webhook.id, -1)
      entry.wire.delete(held.id)
      entry.done.push(held.id)
      this.wakeSoon()
    }
    const now = this.clock.now()
    const {webhook} = entry
    this.breakers.record(webhook, held.id, result, now)
    const outcome = attemptOutcome(result, held.attemptsMade + 1 >= webhook.retryAttempts + 1)
    const statusCode = result.kind === 'response' ? result.statusCode : null
    // One line per finished attempt: ids, answer and latency, never the payload or the secret.
    this.deps.logger.info(
      {
        delivery_id: delivery.id,
        webhook_id: webhook.id,
        event_id: event.id,
        attempt: held.nextAttemptNumber,
        status: statusCode ?? describeResult(result),
        duration_ms: result.durationMs,
        outcome,
      },
      'delivery attempt',
    )
    const retryAt = outcome === 'retry' ? now + retryDelayMs(held.attemptsMade + 1, this.options.baseDelayMs, this.options.maxDelayMs) : undefined
    await this.attempts.record({
      attempt: {
        deliveryId: delivery.id,
        attemptNumber: held.nextAttemptNumber,
        startedAt,
        durationMs: result.durationMs,
        statusCode,
        error: result.kind === 'response' ? null : result.error,
        responseSnippet: result.kind === 'response' ? result.snippet : null,
        outcome,
      },
      ...(outcome === 'success' ? {succeededFor: webhook.id} : {}),
      ...(retryAt === undefined ? {} : {retryAt}),
    })
    held.attemptsMade++
    held.nextAttemptNumber++
    // Lost meanwhile (cancelled, taken over): not ours to go on with.
    if (!this.held.has(held.id)) return
    if (retryAt !== undefined) {
      // The refresh forgets a webhook with nothing in its lane; this retry puts it back.
      if (!this.webhooks.has(webhook.id)) this.webhooks.set(webhook.id, entry)
      this.lanes.add(held, retryAt, now)
      this.wake()
      return
    }
    this.letGo(held.id)
    if (outcome === 'success') {
      this.deps.metrics?.deliveries.inc({outcome: 'succeeded'})
      return
    }
    await this.claims.finish(delivery.id, 'failed', describeResult(result))
    this.deps.metrics?.deliveries.inc({outcome: 'failed'})
    await this.health.deliveryFailed(webhook.id)
  }

  /** Sleeps until woken, or until the next retry, breaker probe or remote slot is due. */
  private async sleep(now: number): Promise<void> {
    let wakeAt = Math.min(this.lanes.nextDueAt() ?? Infinity, now + IDLE_WAKE_MS)
    for (const webhookId of this.lanes.webhooksWithDue()) {
      const entry = this.webhooks.get(webhookId)
      if (!entry) continue
      if (entry.blockedUntil > now) wakeAt = Math.min(wakeAt, entry.blockedUntil)
      else if (entry.webhook.breaker.state !== 'closed') wakeAt = Math.min(wakeAt, Math.max(now + REMOTE_CAP_RETRY_MS, entry.webhook.breaker.until ?? 0))
    }
    for (const entry of this.webhooks.values()) if (entry.done.length > 0) wakeAt = Math.min(wakeAt, entry.blockedUntil)
    if (!this.dispatching) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, wakeAt - now))
      // A worker driven only by process() (tests, a rescue) must not keep its process alive.
      timer.unref()
      this.wakeDispatcher = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    this.wakeDispatcher = null
  }

  /** The heartbeat: renews every lease this worker holds; drops what it lost (cancelled, redelivered, taken over). */
  private async renewLeases(): Promise<void> {
    const lost = await this.claims.renewAll([...this.held.keys()])
    for (const id of lost) {
      const held = this.held.get(id)
      if (held) this.lanes.remove(id, held.webhookId)
      this.letGo(id)
    }
  }

  /**
   * Reads again the webhooks this worker holds deliveries of: a rotated secret signs the next
   * attempt, a changed URL or setting applies to it, another worker's breaker decision holds or
   * frees the lane, and a deleted or disabled webhook's deliveries end here as cancelled.
   */
  private async refreshWebhooks(): Promise<void> {
    const current = await this.claims.currentWebhooks([...this.webhooks.keys()])
    for (const [webhookId, entry] of this.webhooks) {
      await this.apply(entry, current.get(webhookId))
      if (this.lanes.size(webhookId) === 0 && entry.onTheWire === 0 && entry.done.length === 0) {
        this.webhooks.delete(webhookId)
        this.breakers.forget(webhookId)
      }
    }
    this.wake()
  }

  /**
   * Takes a fresh read of a webhook into its entry; false when it was deleted or disabled, and
   * then its lane's deliveries end here as cancelled. A breaker change this worker is still
   * writing wins over the read, which may predate it.
   */
  private async apply(entry: WebhookEntry, latest: SendingWebhook | undefined): Promise<boolean> {
    if (latest?.webhook.isActive) {
      entry.webhook = this.breakers.settled(latest.webhook.id) ? latest.webhook : {...latest.webhook, breaker: entry.webhook.breaker}
      entry.secrets = latest.secrets
      return true
    }
    const dropped = this.lanes.drop(entry.webhook.id)
    for (const held of dropped) this.letGo(held.id)
    await this.claims.settle(
      dropped.map((held) => held.id),
      'cancelled',
      latest ? 'webhook disabled' : 'webhook deleted',
    )
    return false
  }

  /** Keeps the in-flight slots of the attempts on the wire from lapsing (see SLOT_LEASE_MS). */
  private async renewSlots(): Promise<void> {
    const now = this.clock.now()
    for (const entry of this.webhooks.values()) {
      if (entry.wire.size > 0)
        await this.deps.inFlight.exchange(entry.webhook, entry.webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, [], [...entry.wire], now + SLOT_LEASE_MS, now)
    }
  }

  /** Frees the in-flight slots of ended attempts that no exchange carried yet (the worker is stopping). */
  private async releaseSlots(): Promise<void> {
    const now = this.clock.now()
    for (const entry of this.webhooks.values()) {
      const done = entry.done.splice(0)
      if (done.length > 0) await this.deps.inFlight.exchange(entry.webhook, 0, done, [], now, now)
    }
  }

  /** This worker no longer holds the delivery; whoever waits on process() for it goes on. */
  private letGo(deliveryId: string): void {
    this.held.delete(deliveryId)
    for (const resolve of this.leaving.get(deliveryId) ?? []) resolve()
    this.leaving.delete(deliveryId)
  }

  /** Deliveries this worker holds by state (delivery-state.ts), for the metrics. */
  private states(): Record<string, number> {
    const {scheduled} = this.lanes.counts()
    let waiting = 0
    let held = 0
    for (const webhookId of this.lanes.webhooksWithDue()) {
      const due = this.lanes.dueCount(webhookId)
      if (this.webhooks.get(webhookId)?.webhook.breaker.state === 'closed') waiting += due
      else held += due
    }
    return {waiting, held, backing_off: scheduled, delivering: this.onTheWire}
  }

  private every(intervalMs: number, work: () => Promise<void>): void {
    let busy = false
    const timer = setInterval(() => {
      if (busy) return
      busy = true
      work()
        .catch((error: Error) => this.deps.logger.warn({err: error}, 'delivery worker housekeeping failed; the next round tries again'))
        .finally(() => (busy = false))
    }, intervalMs)
    timer.unref()
    this.timers.push(timer)
  }
}
