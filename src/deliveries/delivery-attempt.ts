import type {Logger} from '../log/logger.js'
import type {Metrics} from '../metrics/metrics.js'
import type {Clock} from '../shared/clock.js'
import type {WebhookHealth} from '../webhooks/webhook-health.js'
import type {AttemptLog} from './attempt-log.js'
import {attemptOutcome, describeResult} from './attempt-outcome.js'
import type {CircuitBreakers} from './circuit-breaker.js'
import type {DeliveryClaims} from './delivery-claims.js'
import type {HeldWebhooks} from './held-webhooks.js'
import {retryDelayMs} from './retry-delay.js'
import type {DeliverySender, SendResult} from './sender.js'
import {signedRequest} from './signed-request.js'
import type {Held, WebhookEntry, WorkerHoldings} from './worker-holdings.js'

interface AttemptParts {
  holdings: WorkerHoldings
  heldWebhooks: HeldWebhooks
  claims: DeliveryClaims
  log: AttemptLog
  health: WebhookHealth
  breakers: CircuitBreakers
  sender: DeliverySender
  clock: Clock
  logger: Logger
  metrics?: Metrics
  /** Tells the dispatcher a retry joined a lane. */
  wake: () => void
  /** Tells the dispatcher an attempt left the wire, so its slot can go to the next delivery. */
  wakeSoon: () => void
}

/**
 * The attempts of a worker's deliveries: each one signed with its webhook's secret as it stands
 * now, sent, counted by the breaker, recorded, then ended or scheduled again in its lane.
 */
export class DeliveryAttempts {
  private readonly sending = new Set<Promise<void>>()

  constructor(
    private readonly parts: AttemptParts,
    /** First retry delay, doubled per failed attempt with jitter, up to maxDelayMs. */
    private readonly delays: {baseDelayMs: number; maxDelayMs: number},
  ) {}

  /** Puts a delivery whose in-flight slot was granted on the wire. */
  send(held: Held, entry: WebhookEntry): void {
    if (entry.webhook.breaker.state === 'half_open') this.parts.breakers.probeSent(entry.webhook.id, held.id)
    const task: Promise<void> = this.attempt(held, entry)
      .catch((error: Error) => {
        // Not renewed any more: the lease lapses and a sweeper hands the delivery out again.
        this.parts.holdings.letGo(held.id)
        this.parts.logger.error({err: error, delivery_id: held.id}, 'delivery attempt failed unexpectedly; its lease lapses and another worker retries it')
      })
      .finally(() => this.sending.delete(task))
    this.sending.add(task)
  }

  /** Resolves once every attempt on the wire has ended and been recorded. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.sending])
  }

  /** One attempt: signed with the webhook's secret as it stands now, sent, recorded, then ended or scheduled again. */
  private async attempt(held: Held, entry: WebhookEntry): Promise<void> {
    const {holdings, claims, clock, metrics} = this.parts
    const {delivery, event} = held.claimed
    const startedAt = clock.now()
    if (held.nextAttemptNumber === 1) metrics?.firstAttemptDelay.observe(Math.max(0, startedAt - delivery.createdAt) / 1000)
    let result: SendResult
    try {
      // A retry reads its webhook again first: the secret, URL and settings as they are now, and whether it still exists.
      if (held.attemptsMade > 0) {
        const latest = (await claims.currentWebhooks([entry.webhook.id])).get(entry.webhook.id)
        if (!(await this.parts.heldWebhooks.apply(entry, latest))) {
          holdings.letGo(held.id)
          await claims.settle([held.id], 'cancelled', latest ? 'webhook disabled' : 'webhook deleted')
          return
        }
      }
      result = await this.parts.sender.send(signedRequest(entry.webhook, entry.secrets, event, delivery.id, startedAt))
    } finally {
      // The slot frees as soon as the receiver is done, before the attempt is recorded.
      holdings.sentOut(entry.webhook.id, -1)
      entry.wire.delete(held.id)
      entry.done.push(held.id)
      this.parts.wakeSoon()
    }
    const now = clock.now()
    const {webhook} = entry
    this.parts.breakers.record(webhook, held.id, result, now)
    const outcome = attemptOutcome(result, held.attemptsMade + 1 >= webhook.retryAttempts + 1)
    const statusCode = result.kind === 'response' ? result.statusCode : null
    // One line per finished attempt: ids, answer and latency, never the payload or the secret.
    this.parts.logger.info(
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
    const retryAt = outcome === 'retry' ? now + retryDelayMs(held.attemptsMade + 1, this.delays.baseDelayMs, this.delays.maxDelayMs) : undefined
    await this.parts.log.record({
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
    if (!holdings.held.has(held.id)) return
    if (retryAt !== undefined) {
      // The refresh forgets a webhook with nothing in its lane; this retry puts it back.
      if (!holdings.webhooks.has(webhook.id)) holdings.webhooks.set(webhook.id, entry)
      holdings.lanes.add(held, retryAt, now)
      this.parts.wake()
      return
    }
    holdings.letGo(held.id)
    if (outcome === 'success') {
      metrics?.deliveries.inc({outcome: 'succeeded'})
      return
    }
    await claims.finish(delivery.id, 'failed', describeResult(result))
    metrics?.deliveries.inc({outcome: 'failed'})
    await this.parts.health.deliveryFailed(webhook.id)
  }
}
