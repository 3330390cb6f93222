import {randomUUID} from 'node:crypto'
import {setMaxListeners} from 'node:events'
import os from 'node:os'

import pRetry, {AbortError} from 'p-retry'

import type {Db} from '../db/knex.js'
import type {EventsStore} from '../events/events-store.js'
import type {Logger} from '../log/logger.js'
import type {Metrics} from '../metrics/metrics.js'
import {type Clock, systemClock} from '../shared/clock.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import {WebhookHealth} from '../webhooks/webhook-health.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import {AttemptLog} from './attempt-log.js'
import {attemptOutcome, describeResult} from './attempt-outcome.js'
import type {DeliveriesStore} from './deliveries-store.js'
import {type ClaimedDelivery, DeliveryClaims, LEASE_MS} from './delivery-claims.js'
import {DeliverySweeper} from './delivery-sweeper.js'
import type {DispatchQueue} from './dispatch-queue.js'
import type {DeliverySender} from './sender.js'
import {signedRequest} from './signed-request.js'

export interface WorkerOptions {
  /** Deliveries in flight at once (each may be waiting out a backoff). */
  concurrency?: number
  /** First retry delay; doubles per attempt with jitter, capped at maxDelayMs (the spec: 30 s). */
  baseDelayMs?: number
  maxDelayMs?: number
  /** How often the sweeper looks for deliveries a queue lost or a dead worker left. */
  sweepIntervalMs?: number
  /** A pending delivery dispatched longer ago than this is dispatched again. */
  redispatchAfterMs?: number
  /** How often the worker renews the leases it holds (default a third of the lease). */
  heartbeatMs?: number
  /** How long a worker with nearly every slot taken waits for more to free before it takes again (see moreFreeSlots). */
  refillWaitMs?: number
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

/** The default of WorkerOptions.refillWaitMs. */
const REFILL_WAIT_MS = 5

/** How a delivery's attempts ended. */
type AttemptsEnd = {kind: 'succeeded'} | {kind: 'failed'; lastError: string} | {kind: 'lost'} | {kind: 'stopped'}

/** Why an attempt ended the delivery at once (3xx, SSRF block), carried through p-retry. */
class TerminalAttempt extends Error {}
class RetryableAttempt extends Error {}
/** The delivery was cancelled or another worker took it over: not ours to finish. */
class LostClaim extends Error {}

/**
 * The delivery worker: takes ids from the queue, claims each delivery (DeliveryClaims), sends
 * it signed with p-retry's exponential backoff, records every attempt, and reports the outcome
 * to the webhook's health. Its sweeper re-dispatches what a queue lost or a dead worker left.
 */
export class DeliveryWorker {
  private readonly options: Required<Omit<WorkerOptions, 'clock'>>
  private readonly clock: Clock
  private readonly claims: DeliveryClaims
  private readonly attempts: AttemptLog
  private readonly health: WebhookHealth
  private readonly sweeper: DeliverySweeper
  private readonly inFlight = new Set<Promise<void>>()
  /** The deliveries this worker holds a lease on: what its heartbeat renews. */
  private readonly held = new Set<string>()
  private heartbeat: NodeJS.Timeout | null = null
  private running = false
  /** Aborts the backoff waits of deliveries in flight when the worker stops. */
  private readonly stopping = new AbortController()
  private loop: Promise<void> | null = null

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
      refillWaitMs: options.refillWaitMs ?? REFILL_WAIT_MS,
      workerId: options.workerId ?? defaultWorkerId(),
    }
    // Every delivery waiting out a backoff listens on the stop signal: up to `concurrency` at once, not a leak.
    setMaxListeners(this.options.concurrency + 16, this.stopping.signal)
    const {db, deliveries, webhooks, events, secrets, queue, logger} = deps
    this.claims = new DeliveryClaims(db, deliveries, webhooks, events, secrets, this.clock, this.options.workerId)
    this.attempts = new AttemptLog(db, deliveries, webhooks, this.options.workerId, this.clock)
    this.health = new WebhookHealth(webhooks, this.clock, logger)
    this.sweeper = new DeliverySweeper(deliveries, queue, this.clock, logger, this.options.redispatchAfterMs)
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.loop = this.takeLoop()
    this.sweeper.start(this.options.sweepIntervalMs)
    this.heartbeat = setInterval(() => {
      this.claims.renewAll([...this.held]).catch((error: Error) => this.deps.logger.warn({err: error, deliveries: this.held.size}, 'renewing delivery leases failed; a retry checks its lease first'))
    }, this.options.heartbeatMs)
    this.heartbeat.unref()
  }

  /**
   * Stops taking work. Deliveries in flight finish their current attempt; those waiting out a
   * backoff go back to the pool at once, to be sent by the next worker (or this one restarted).
   */
  async stop(): Promise<void> {
    this.running = false
    this.stopping.abort()
    this.sweeper.stop()
    await this.deps.queue.close()
    await this.loop
    // The heartbeat goes on while the attempts in flight finish.
    await Promise.allSettled([...this.inFlight])
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.deps.sender.close()
  }

  /** Re-dispatches deliveries left behind; returns how many. Runs on a timer, callable from tests. */
  async sweep(): Promise<number> {
    return this.sweeper.sweep()
  }

  /** Slots not taken by a delivery in flight. */
  private freeSlots(): number {
    return this.options.concurrency - this.inFlight.size
  }

  /** How many free slots a saturated worker waits for (at most refillWaitMs) before it takes more. */
  private refillBatch(): number {
    return Math.max(1, Math.floor(this.options.concurrency / 4))
  }

  /**
   * Waits until a refill batch of slots is free or `waitMs` have passed. A worker with every slot
   * taken would otherwise take and claim one delivery each time one finishes: a Redis read, a
   * claim round trip and its statements per delivery. Waiting a few milliseconds lets one take
   * and one claim serve several, and delays a delivery by at most that.
   */
  private async moreFreeSlots(waitMs: number): Promise<void> {
    const deadline = performance.now() + waitMs
    while (this.running && this.inFlight.size > 0 && this.freeSlots() < this.refillBatch()) {
      const left = deadline - performance.now()
      if (left <= 0) return
      let timer: NodeJS.Timeout | undefined
      await Promise.race([Promise.race(this.inFlight), new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))])
      clearTimeout(timer)
    }
  }

  /** Delivers one delivery if this worker can claim it; resolves when it is finished. */
  async process(deliveryId: string): Promise<void> {
    const [claimed] = await this.claims.claimMany([deliveryId])
    if (claimed) await this.deliver(claimed)
  }

  /** Sends a claimed delivery until it succeeds or fails for good; a success is ended in its attempt's record. */
  private async deliver(claimed: ClaimedDelivery): Promise<void> {
    const deliveryId = claimed.delivery.id
    this.held.add(deliveryId)
    let end: AttemptsEnd
    try {
      end = await this.sendWithRetries(claimed)
    } finally {
      this.held.delete(deliveryId)
    }
    if (end.kind === 'lost') return
    if (end.kind === 'stopped') return this.claims.release(deliveryId)
    if (end.kind === 'succeeded') {
      this.deps.metrics?.deliveries.inc({outcome: 'succeeded'})
      return
    }
    await this.claims.finish(deliveryId, 'failed', end.lastError)
    this.deps.metrics?.deliveries.inc({outcome: 'failed'})
    await this.health.deliveryFailed(claimed.webhook.id)
  }

  /** The delivery's remaining attempts, each recorded, with exponential backoff between them. */
  private async sendWithRetries(claimed: ClaimedDelivery): Promise<AttemptsEnd> {
    const {delivery, webhook, secret, event, priorAttempts} = claimed
    const attemptsLeft = webhook.retryAttempts + 1 - delivery.attemptsMade
    if (attemptsLeft <= 0) return {kind: 'failed', lastError: 'no attempt left'}
    let lastError = ''
    try {
      await pRetry(
        async (attempt) => {
          // The claim has just leased the first attempt; a retry renews the lease after its backoff.
          if (attempt > 1 && !(await this.claims.renew(claimed))) throw new AbortError(new LostClaim('the delivery was cancelled or taken over'))
          const startedAt = this.clock.now()
          const result = await this.deps.sender.send(signedRequest(webhook, secret, event, delivery.id, startedAt))
          const outcome = attemptOutcome(result, attempt >= attemptsLeft)
          const statusCode = result.kind === 'response' ? result.statusCode : null
          // One line per finished attempt: ids, answer and latency, never the payload or the secret.
          this.deps.logger.info(
            {delivery_id: delivery.id, webhook_id: webhook.id, event_id: event.id, attempt: priorAttempts + attempt, status: statusCode ?? describeResult(result), duration_ms: result.durationMs, outcome},
            'delivery attempt',
          )
          await this.attempts.record({
            attempt: {
              deliveryId: delivery.id,
              attemptNumber: priorAttempts + attempt,
              startedAt,
              durationMs: result.durationMs,
              statusCode,
              error: result.kind === 'response' ? null : result.error,
              responseSnippet: result.kind === 'response' ? result.snippet : null,
              outcome,
            },
            ...(outcome === 'success' ? {succeededFor: webhook.id} : {}),
          })
          if (outcome === 'success') return
          lastError = describeResult(result)
          throw outcome === 'retry' ? new RetryableAttempt(lastError) : new AbortError(new TerminalAttempt(lastError))
        },
        {
          retries: attemptsLeft - 1,
          factor: 2,
          minTimeout: this.options.baseDelayMs,
          maxTimeout: this.options.maxDelayMs,
          randomize: true,
          signal: this.stopping.signal,
        },
      )
      return {kind: 'succeeded'}
    } catch (error) {
      if (error instanceof LostClaim) return {kind: 'lost'}
      if (this.stopping.signal.aborted && error === this.stopping.signal.reason) return {kind: 'stopped'}
      if (error instanceof TerminalAttempt || error instanceof RetryableAttempt) return {kind: 'failed', lastError}
      throw error
    }
  }

  private async takeLoop(): Promise<void> {
    while (this.running) {
      if (this.freeSlots() <= 0) {
        await Promise.race(this.inFlight)
        continue
      }
      if (this.freeSlots() < this.refillBatch()) await this.moreFreeSlots(this.options.refillWaitMs)
      // Counted after the wait: the slots freed meanwhile are taken in the same read and claim.
      const free = this.freeSlots()
      let ids: string[]
      try {
        ids = await this.deps.queue.take(free, 1000)
      } catch (error) {
        if (!this.running) break
        this.deps.logger.warn({err: error}, 'delivery queue unavailable; retrying')
        await new Promise((resolve) => setTimeout(resolve, 1000))
        continue
      }
      // One claim for all the ids taken; each claimed delivery then runs on its own.
      let claimed: ClaimedDelivery[] = []
      try {
        claimed = await this.claims.claimMany(ids)
      } catch (error) {
        this.deps.logger.error({err: error, deliveries: ids.length}, 'claiming deliveries failed; the sweeper will dispatch them again')
      }
      const mine = new Set(claimed.map((delivery) => delivery.delivery.id))
      for (const id of ids) if (!mine.has(id)) this.deps.queue.ack(id).catch(() => undefined)
      for (const delivery of claimed) {
        const id = delivery.delivery.id
        const task: Promise<void> = this.deliver(delivery)
          .catch((error: Error) => this.deps.logger.error({err: error, delivery_id: id}, 'delivery failed unexpectedly'))
          .then(() => this.deps.queue.ack(id))
          .catch(() => undefined)
          .finally(() => this.inFlight.delete(task))
        this.inFlight.add(task)
      }
    }
  }
}
