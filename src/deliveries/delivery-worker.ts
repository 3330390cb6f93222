import {randomUUID} from 'node:crypto'
import os from 'node:os'

import pRetry, {AbortError} from 'p-retry'

import type {EventsStore} from '../events/events-store.js'
import type {Logger} from '../log/logger.js'
import type {Metrics} from '../metrics/metrics.js'
import {type Clock, isoTime, systemClock} from '../shared/clock.js'
import type {SecretBox} from '../webhooks/secret-box.js'
import {AUTO_DISABLE_AFTER_MS} from '../webhooks/webhook-types.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import type {DeliveriesStore} from './deliveries-store.js'
import type {AttemptOutcome} from './delivery-types.js'
import type {DispatchQueue} from './dispatch-queue.js'
import type {DeliverySender, SendResult} from './sender.js'
import {signatureFor} from './signing.js'

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
  workerId?: string
  clock?: Clock
}

interface Dependencies {
  deliveries: DeliveriesStore
  webhooks: WebhooksStore
  events: EventsStore
  secrets: SecretBox
  sender: DeliverySender
  queue: DispatchQueue
  logger: Logger
  metrics?: Metrics
}

/** Why an attempt ended the delivery at once (3xx, SSRF block), carried through p-retry. */
class TerminalAttempt extends Error {}
class RetryableAttempt extends Error {}
/** The delivery was cancelled or another worker took it over: not ours to finish. */
class LostClaim extends Error {}

/**
 * The delivery worker: takes ids from the queue, claims each delivery in the database (a lease,
 * so no two workers deliver it at once), signs and sends it with p-retry's exponential backoff,
 * records every attempt, and keeps webhook health. A sweeper re-dispatches deliveries that a
 * queue lost or whose worker died.
 */
export class DeliveryWorker {
  private readonly options: Required<Omit<WorkerOptions, 'clock'>>
  private readonly clock: Clock
  private readonly inFlight = new Set<Promise<void>>()
  private running = false
  /** Aborts the backoff waits of deliveries in flight when the worker stops. */
  private readonly stopping = new AbortController()
  private loop: Promise<void> | null = null
  private sweepTimer: NodeJS.Timeout | null = null

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
      workerId: options.workerId ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    }
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.loop = this.takeLoop()
    let sweeping = false
    this.sweepTimer = setInterval(() => {
      // One sweep at a time: a slow database must not pile sweeps up.
      if (sweeping) return
      sweeping = true
      this.sweep()
        .catch((error: Error) => this.deps.logger.warn({err: {message: error.message}}, 'delivery sweep failed'))
        .finally(() => (sweeping = false))
    }, this.options.sweepIntervalMs)
    this.sweepTimer.unref()
  }

  /**
   * Stops taking work. Deliveries in flight finish their current attempt; those waiting out a
   * backoff go back to the pool at once, to be sent by the next worker (or this one restarted).
   */
  async stop(): Promise<void> {
    this.running = false
    this.stopping.abort()
    if (this.sweepTimer) clearInterval(this.sweepTimer)
    await this.deps.queue.close()
    await this.loop
    await Promise.allSettled([...this.inFlight])
    this.deps.sender.close()
  }

  /** Re-dispatches deliveries left behind; returns how many. Runs on a timer, callable from tests. */
  async sweep(): Promise<number> {
    const now = this.clock.now()
    await this.deps.deliveries.releaseExpiredLeases(now)
    const ids = await this.deps.deliveries.takeUndispatched(now, now - this.options.redispatchAfterMs, 500)
    if (ids.length > 0) await this.deps.queue.enqueue(ids)
    return ids.length
  }

  /** Delivers one delivery if this worker can claim it; resolves when it is finished. */
  async process(deliveryId: string): Promise<void> {
    const {deliveries, webhooks, events, secrets, logger} = this.deps
    const workerId = this.options.workerId
    const delivery = await deliveries.find(deliveryId)
    const loaded = delivery && (await webhooks.findWithSecret(delivery.webhookId))
    const leaseMs = () => (loaded ? loaded.webhook.timeoutSeconds * 1000 : 60_000) + this.options.maxDelayMs + 30_000
    if (!delivery || !(await deliveries.claim(deliveryId, workerId, this.clock.now(), this.clock.now() + leaseMs()))) return

    if (!loaded) return deliveries.finish(deliveryId, workerId, 'cancelled', this.clock.now(), 'webhook deleted')
    const {webhook, secretCiphertext} = loaded
    if (!webhook.isActive) return deliveries.finish(deliveryId, workerId, 'cancelled', this.clock.now(), 'webhook disabled')
    const event = await events.find(delivery.eventId)
    if (!event) return deliveries.finish(deliveryId, workerId, 'failed', this.clock.now(), 'event not found')

    const secret = secrets.open(secretCiphertext)
    const attemptsLeft = webhook.retryAttempts + 1 - delivery.attemptsMade
    const priorAttempts = await deliveries.countAttempts(deliveryId)
    let lastError = 'no attempt left'
    try {
      if (attemptsLeft <= 0) throw new TerminalAttempt(lastError)
      await pRetry(
        async (attempt) => {
          if (!(await deliveries.renewLease(deliveryId, workerId, this.clock.now() + leaseMs()))) {
            throw new AbortError(new LostClaim('the delivery was cancelled or taken over'))
          }
          const timestamp = Math.floor(this.clock.now() / 1000)
          const body = JSON.stringify({event: event.type, delivered_at: isoTime(this.clock.now()), lead: event.payload})
          const startedAt = this.clock.now()
          const result = await this.deps.sender.send({
            url: webhook.url,
            body,
            timeoutMs: webhook.timeoutSeconds * 1000,
            headers: {
              'content-type': 'application/json',
              'user-agent': 'leads-webhooks/1.0',
              'x-service-signature': signatureFor(secret, timestamp, body),
              'x-service-timestamp': String(timestamp),
              'x-service-delivery': deliveryId,
            },
          })
          const outcome = outcomeOf(result)
          await deliveries.recordAttempt(
            {
              deliveryId,
              attemptNumber: priorAttempts + attempt,
              startedAt,
              durationMs: result.durationMs,
              statusCode: result.kind === 'response' ? result.statusCode : null,
              error: result.kind === 'response' ? null : result.error,
              responseSnippet: result.kind === 'response' ? result.snippet : null,
              outcome,
            },
            workerId,
          )
          if (outcome === 'success') return
          lastError = describe(result)
          throw outcome === 'terminal' ? new AbortError(new TerminalAttempt(lastError)) : new RetryableAttempt(lastError)
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
      await deliveries.finish(deliveryId, workerId, 'succeeded', this.clock.now(), null)
      this.deps.metrics?.deliveries.inc({outcome: 'succeeded'})
      await webhooks.recordSuccess(webhook.id, this.clock.now())
    } catch (error) {
      if (error instanceof LostClaim) return
      if (this.stopping.signal.aborted && error === this.stopping.signal.reason) return deliveries.release(deliveryId, workerId, this.clock.now())
      if (!(error instanceof TerminalAttempt || error instanceof RetryableAttempt)) throw error
      await deliveries.finish(deliveryId, workerId, 'failed', this.clock.now(), lastError)
      this.deps.metrics?.deliveries.inc({outcome: 'failed'})
      const health = await webhooks.recordFailure(webhook.id, this.clock.now())
      if (health?.isActive && health.failingSince !== null && this.clock.now() - health.failingSince >= AUTO_DISABLE_AFTER_MS) {
        await webhooks.update(health.customerId, health.id, {isActive: false, disabledReason: 'every delivery failed for 5 days', updatedAt: this.clock.now()})
        logger.warn({webhook_id: health.id, customer_id: health.customerId}, 'webhook disabled after 5 days of failed deliveries')
      }
    }
  }

  private async takeLoop(): Promise<void> {
    while (this.running) {
      const free = this.options.concurrency - this.inFlight.size
      if (free <= 0) {
        await Promise.race(this.inFlight)
        continue
      }
      let ids: string[]
      try {
        ids = await this.deps.queue.take(free, 1000)
      } catch (error) {
        if (!this.running) break
        this.deps.logger.warn({err: {message: (error as Error).message}}, 'delivery queue unavailable; retrying')
        await new Promise((resolve) => setTimeout(resolve, 1000))
        continue
      }
      for (const id of ids) {
        const task: Promise<void> = this.process(id)
          .catch((error: Error) => this.deps.logger.error({err: {message: error.message}, delivery_id: id}, 'delivery failed unexpectedly'))
          .then(() => this.deps.queue.ack(id))
          .catch(() => undefined)
          .finally(() => this.inFlight.delete(task))
        this.inFlight.add(task)
      }
    }
  }
}

function outcomeOf(result: SendResult): AttemptOutcome {
  if (result.kind === 'blocked') return 'terminal'
  if (result.kind !== 'response') return 'retry'
  if (result.statusCode >= 200 && result.statusCode < 300) return 'success'
  // Redirects are neither followed nor retried.
  if (result.statusCode >= 300 && result.statusCode < 400) return 'terminal'
  return 'retry'
}

function describe(result: SendResult): string {
  return result.kind === 'response' ? `HTTP ${result.statusCode}` : result.error
}
