import {randomUUID} from 'node:crypto'
import os from 'node:os'

import type {Db} from '../db/knex.js'
import type {EventsStore} from '../events/events-store.js'
import type {Logger} from '../log/logger.js'
import type {Metrics} from '../metrics/metrics.js'
import {type Clock, systemClock} from '../shared/clock.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import {WebhookHealth} from '../webhooks/webhook-health.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import {AttemptLog} from './attempt-log.js'
import {type BreakerOptions, CircuitBreakers} from './circuit-breaker.js'
import type {DeliveriesStore} from './deliveries-store.js'
import {DeliveryAttempts} from './delivery-attempt.js'
import {DeliveryClaims, LEASE_MS} from './delivery-claims.js'
import {DeliverySweeper} from './delivery-sweeper.js'
import type {DispatchQueue} from './dispatch-queue.js'
import {HeldWebhooks} from './held-webhooks.js'
import type {InFlightSlots} from './in-flight-slots.js'
import type {DeliverySender} from './sender.js'
import {SlotExchange} from './slot-exchange.js'
import {WorkerDispatcher} from './worker-dispatcher.js'
import {WorkerHoldings} from './worker-holdings.js'
import {WorkerHousekeeping} from './worker-housekeeping.js'
import {WorkerIntake} from './worker-intake.js'

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

/**
 * The delivery worker. It takes delivery ids from the queue (and from its sweeper), claims them,
 * and keeps them in a lane per webhook; its dispatcher sends from the lanes round-robin, within
 * the worker's slots, each webhook's in-flight cap (shared by every worker) and its circuit
 * breaker. An attempt holds a slot only while it is on the wire: a failed one is recorded with
 * its next attempt's due time and waits in the lane for it, so one dead receiver never holds the
 * slots another webhook needs (docs/api.md, "Delivery scheduling").
 *
 * The parts, one job each: WorkerIntake claims deliveries into the lanes, WorkerDispatcher picks
 * from them, SlotExchange takes their in-flight slots, DeliveryAttempts sends and records, and
 * WorkerHousekeeping keeps leases, webhooks and slots current; they share WorkerHoldings.
 */
export class DeliveryWorker {
  private readonly options: Required<Omit<WorkerOptions, 'clock' | 'breaker'>>
  private readonly holdings: WorkerHoldings
  private readonly claims: DeliveryClaims
  private readonly intake: WorkerIntake
  private readonly dispatcher: WorkerDispatcher
  private readonly slots: SlotExchange
  private readonly attempts: DeliveryAttempts
  private readonly housekeeping: WorkerHousekeeping
  private readonly sweeper: DeliverySweeper
  private running = false

  constructor(
    private readonly deps: Dependencies,
    options: WorkerOptions = {},
  ) {
    const clock = options.clock ?? systemClock
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
    const {db, deliveries, webhooks, events, secrets, sender, queue, inFlight, logger, metrics} = deps
    const {workerId, laneLimit, redispatchAfterMs} = this.options
    const wake = () => this.dispatcher.wake()
    const holdings = new WorkerHoldings(laneLimit)
    const claims = new DeliveryClaims(deliveries.leases, webhooks, events, secrets, clock, workerId)
    this.holdings = holdings
    this.claims = claims
    const breakers = new CircuitBreakers(webhooks, logger, wake, metrics, options.breaker)
    const heldWebhooks = new HeldWebhooks(holdings, claims, breakers, wake)
    this.intake = new WorkerIntake({holdings, heldWebhooks, claims, leases: deliveries.leases, queue, clock, logger, wake}, {laneLimit, redispatchAfterMs})
    this.attempts = new DeliveryAttempts(
      {
        holdings,
        heldWebhooks,
        claims,
        log: new AttemptLog(db, deliveries.attempts, webhooks, workerId, clock),
        health: new WebhookHealth(webhooks, clock, logger),
        breakers,
        sender,
        clock,
        logger,
        metrics,
        wake,
        wakeSoon: () => this.dispatcher.wakeSoon(),
      },
      this.options,
    )
    this.slots = new SlotExchange({
      holdings,
      inFlight,
      breakers,
      clock,
      logger,
      send: (held, entry) => this.attempts.send(held, entry),
      refill: (entry) => this.intake.refill(entry),
    })
    this.dispatcher = new WorkerDispatcher({holdings, breakers, slots: this.slots, clock, logger}, this.options.concurrency)
    this.housekeeping = new WorkerHousekeeping({holdings, heldWebhooks, claims, slots: this.slots, logger})
    this.sweeper = new DeliverySweeper(
      deliveries.leases,
      {roomFor: (id) => holdings.roomFor(id), take: (ids) => this.intake.take(ids)},
      clock,
      logger,
      redispatchAfterMs,
    )
    metrics?.reportWorkerStates(() => holdings.states())
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.intake.start()
    this.dispatcher.ensureRunning()
    this.sweeper.start(this.options.sweepIntervalMs)
    this.housekeeping.start(this.options)
  }

  /**
   * Stops taking work. Attempts on the wire finish and are recorded; every other delivery this
   * worker holds goes back to the pool at once, due now, for the next worker (or this one restarted).
   */
  async stop(): Promise<void> {
    this.running = false
    this.sweeper.stop()
    this.housekeeping.stop()
    await this.intake.stop()
    await this.dispatcher.stop()
    await this.attempts.settled()
    const waiting = this.holdings.lanes.drainAll()
    await this.claims
      .release(
        waiting.map((held) => held.id),
        'due now',
      )
      .catch((error: Error) => this.deps.logger.warn({err: error}, 'handing deliveries back failed; their leases lapse instead'))
    for (const held of waiting) this.holdings.letGo(held.id)
    await this.slots.releaseEnded().catch(() => undefined)
    this.deps.sender.close()
  }

  /** Takes the deliveries no worker will (see DeliverySweeper); returns how many it found. Runs on a timer, callable from tests. */
  async sweep(): Promise<number> {
    return this.sweeper.sweep()
  }

  /** Claims one delivery and sends it if this worker can; resolves once this worker has let it go. */
  async process(deliveryId: string): Promise<void> {
    this.dispatcher.ensureRunning()
    const gone = this.holdings.untilLetGo(deliveryId)
    await this.intake.take([deliveryId])
    if (!this.holdings.held.has(deliveryId)) this.holdings.letGo(deliveryId)
    await gone
  }
}
