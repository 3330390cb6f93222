import type {Logger} from '../log/logger.js'
import type {Metrics} from '../metrics/metrics.js'
import type {Breaker, Webhook} from '../webhooks/webhook-types.js'
import type {WebhooksStore} from '../webhooks/webhooks-store.js'
import type {SendResult} from './sender.js'

export interface BreakerOptions {
  /** Failed attempts in a row (timeouts, connection failures, 5xx, 429) that open the breaker. */
  failureThreshold?: number
  /** The first cool-down; each failed probe doubles it, up to maxCooldownMs. */
  cooldownMs?: number
  maxCooldownMs?: number
}

const BREAKER_DEFAULTS: Required<BreakerOptions> = {failureThreshold: 5, cooldownMs: 5_000, maxCooldownMs: 30_000}

/** What the breaker lets a webhook's lane do now. */
type Gate = 'send' | 'probe' | 'hold'

/** This worker's side of one webhook's breaker. */
interface Local {
  /** Attempts in a row that failed as an outage does. */
  failures: number
  cooldownMs: number
  /** A probe was won and not sent yet. */
  probeWon: boolean
  /** The delivery sent as the probe, while it is on the wire. */
  probing: string | null
  /** A claim of the probe is under way. */
  claiming: boolean
}

/**
 * Per-webhook circuit breakers (docs/api.md, "Delivery scheduling"). `closed` sends as usual;
 * after `failureThreshold` failed attempts in a row the breaker opens and nothing is sent for a
 * cool-down; then one worker wins the probe (`half_open`) and sends one delivery: a success closes
 * the breaker, a failure opens it again for twice the cool-down (at most maxCooldownMs). The state
 * lives on the webhook's row, so every worker holds the webhook's deliveries and operators see it;
 * each worker counts the failures it saw itself. Deliveries held by the breaker spend no attempt.
 */
export class CircuitBreakers {
  private readonly options: Required<BreakerOptions>
  private readonly local = new Map<string, Local>()
  /** Breaker changes being written, per webhook. */
  private readonly writing = new Map<string, number>()

  constructor(
    private readonly store: WebhooksStore,
    private readonly logger: Logger,
    private readonly wake: () => void,
    private readonly metrics?: Metrics,
    options: BreakerOptions = {},
  ) {
    this.options = {...BREAKER_DEFAULTS, ...options}
  }

  /** Whether the webhook's due deliveries may go out now; starts the claim of a probe when one is due. */
  gate(webhook: Webhook, now: number): Gate {
    const local = this.localOf(webhook.id)
    if (local.probing !== null) return 'hold'
    if (webhook.breaker.state === 'closed') return 'send'
    if (local.probeWon) return 'probe'
    if ((webhook.breaker.until ?? 0) <= now && !local.claiming) this.claimProbe(webhook, now, local)
    return 'hold'
  }

  /** The delivery now going out as the webhook's probe. */
  probeSent(webhookId: string, deliveryId: string): void {
    const local = this.localOf(webhookId)
    local.probeWon = false
    local.probing = deliveryId
  }

  /** A probe won but not sent (the lane emptied, the webhook was dropped): free it for the next claim. */
  probeUnused(webhook: Webhook): void {
    const local = this.localOf(webhook.id)
    if (!local.probeWon) return
    local.probeWon = false
    webhook.breaker = {...webhook.breaker, state: 'open', until: 0}
  }

  /** Counts an attempt's result: opens, closes or re-opens the breaker. `webhook` is this worker's copy, updated in place. */
  record(webhook: Webhook, deliveryId: string, result: SendResult, now: number): void {
    const local = this.localOf(webhook.id)
    const wasProbe = local.probing === deliveryId
    if (wasProbe) local.probing = null
    if (!isOutage(result)) {
      local.failures = 0
      local.cooldownMs = this.options.cooldownMs
      if (webhook.breaker.state !== 'closed') this.change(webhook, {state: 'closed', until: null, openedAt: null}, 'the receiver answered')
      return
    }
    local.failures++
    if (wasProbe) {
      local.cooldownMs = Math.min(this.options.maxCooldownMs, local.cooldownMs * 2)
      this.change(webhook, {state: 'open', until: now + local.cooldownMs, openedAt: webhook.breaker.openedAt ?? now}, 'the probe failed')
    } else if (webhook.breaker.state === 'closed' && local.failures >= this.options.failureThreshold) {
      this.change(webhook, {state: 'open', until: now + local.cooldownMs, openedAt: now}, `${local.failures} attempts in a row failed`)
    }
  }

  /** Whether every breaker change this worker made to the webhook is written (so a fresh read of its row includes them). */
  settled(webhookId: string): boolean {
    return !this.writing.has(webhookId)
  }

  /** Forgets a webhook this worker no longer holds deliveries of. */
  forget(webhookId: string): void {
    const local = this.local.get(webhookId)
    if (local && local.probing === null && !local.claiming) this.local.delete(webhookId)
  }

  private claimProbe(webhook: Webhook, now: number, local: Local): void {
    local.claiming = true
    // The claim lapses after the probe's longest possible attempt, so a worker that dies probing frees it.
    const until = now + webhook.timeoutSeconds * 1000 + this.options.cooldownMs
    this.store
      .claimProbe(webhook, now, until)
      .then((won) => {
        if (!won) return
        local.probeWon = true
        webhook.breaker = {...webhook.breaker, state: 'half_open', until}
        this.metrics?.breakerTransitions.inc({to: 'half_open'})
        this.logger.info({webhook_id: webhook.id, customer_id: webhook.customerId}, 'webhook breaker half-open: one probe delivery')
      })
      .catch((error: Error) => this.logger.warn({err: error, webhook_id: webhook.id}, 'claiming a breaker probe failed; the next look tries again'))
      .finally(() => {
        local.claiming = false
        this.wake()
      })
  }

  private change(webhook: Webhook, breaker: Breaker, why: string): void {
    webhook.breaker = breaker
    this.metrics?.breakerTransitions.inc({to: breaker.state})
    this.logger.info(
      {webhook_id: webhook.id, customer_id: webhook.customerId, breaker: breaker.state, until: breaker.until},
      `webhook breaker ${breaker.state}: ${why}`,
    )
    this.writing.set(webhook.id, (this.writing.get(webhook.id) ?? 0) + 1)
    this.store
      .setBreaker(webhook, breaker)
      .catch((error: Error) => this.logger.warn({err: error, webhook_id: webhook.id}, 'recording the breaker failed; this worker acts on it anyway'))
      .finally(() => {
        const left = this.writing.get(webhook.id)! - 1
        if (left === 0) this.writing.delete(webhook.id)
        else this.writing.set(webhook.id, left)
      })
  }

  private localOf(webhookId: string): Local {
    let local = this.local.get(webhookId)
    if (!local) {
      local = {failures: 0, cooldownMs: this.options.cooldownMs, probeWon: false, probing: null, claiming: false}
      this.local.set(webhookId, local)
    }
    return local
  }
}

/** Whether an attempt's result says the receiver is down or overloaded (what counts toward the breaker). */
function isOutage(result: SendResult): boolean {
  if (result.kind === 'timeout' || result.kind === 'network') return true
  return result.kind === 'response' && (result.statusCode >= 500 || result.statusCode === 429)
}
