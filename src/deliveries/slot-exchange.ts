import type {Logger} from '../log/logger.js'
import type {Clock} from '../shared/clock.js'
import {DEFAULT_MAX_IN_FLIGHT} from '../webhooks/webhook-types.js'
import type {CircuitBreakers} from './circuit-breaker.js'
import type {InFlightSlots} from './in-flight-slots.js'
import type {Held, WebhookEntry, WorkerHoldings} from './worker-holdings.js'

/** How soon a webhook whose in-flight cap other workers filled is asked again. */
export const REMOTE_CAP_RETRY_MS = 50
/**
 * How long an in-flight slot lasts unless its worker renews it (every SLOT_RENEW_MS while the
 * attempt is on the wire): a worker that dies frees its webhooks' slots within this, so the
 * other workers go on sending to them.
 */
const SLOT_LEASE_MS = 5000
export const SLOT_RENEW_MS = 1500

interface ExchangeParts {
  holdings: WorkerHoldings
  inFlight: InFlightSlots
  breakers: CircuitBreakers
  clock: Clock
  logger: Logger
  /** Puts a delivery whose slot was granted on the wire. */
  send: (held: Held, entry: WebhookEntry) => void
  /** Tops up a webhook's lane from the database after an exchange (WorkerIntake.refill). */
  refill: (entry: WebhookEntry) => void
}

/**
 * A worker's side of the in-flight record shared by every worker (in-flight-slots.ts): takes
 * slots for the deliveries the dispatcher picked while freeing those of ended attempts, one
 * exchange per webhook; keeps the slots of attempts on the wire from lapsing; frees the rest
 * when the worker stops.
 */
export class SlotExchange {
  constructor(private readonly parts: ExchangeParts) {}

  /** Exchanges slots for the picked deliveries (and the ended attempts of every webhook not blocked), then sends what was granted. */
  async exchangeAndSend(picked: Held[], now: number): Promise<void> {
    const {holdings} = this.parts
    const byWebhook = new Map<string, Held[]>()
    for (const held of picked) {
      const wanted = byWebhook.get(held.webhookId)
      if (wanted) wanted.push(held)
      else byWebhook.set(held.webhookId, [held])
    }
    for (const [webhookId, entry] of holdings.webhooks)
      if (entry.done.length > 0 && entry.blockedUntil <= now && !byWebhook.has(webhookId)) byWebhook.set(webhookId, [])
    // Counted on the wire while the exchange is out, so nothing else is picked into the same room.
    for (const held of picked) holdings.sentOut(held.webhookId, +1)
    await Promise.all([...byWebhook].map(([webhookId, wanted]) => this.exchangeFor(webhookId, wanted, now)))
  }

  /** Keeps the in-flight slots of the attempts on the wire from lapsing (see SLOT_LEASE_MS). */
  async renew(): Promise<void> {
    const now = this.parts.clock.now()
    for (const entry of this.parts.holdings.webhooks.values()) {
      if (entry.wire.size > 0)
        await this.parts.inFlight.exchange(entry.webhook, entry.webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, [], [...entry.wire], now + SLOT_LEASE_MS, now)
    }
  }

  /** Frees the in-flight slots of ended attempts that no exchange carried yet (the worker is stopping). */
  async releaseEnded(): Promise<void> {
    const now = this.parts.clock.now()
    for (const entry of this.parts.holdings.webhooks.values()) {
      const done = entry.done.splice(0)
      if (done.length > 0) await this.parts.inFlight.exchange(entry.webhook, 0, done, [], now, now)
    }
  }

  private async exchangeFor(webhookId: string, wanted: Held[], now: number): Promise<void> {
    const {holdings, breakers, clock} = this.parts
    const entry = holdings.webhooks.get(webhookId)!
    const done = entry.done.splice(0)
    let granted: Set<string>
    try {
      const cap = entry.webhook.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
      granted = new Set(
        await this.parts.inFlight.exchange(
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
      entry.blockedUntil = clock.now() + REMOTE_CAP_RETRY_MS
      granted = new Set()
      this.parts.logger.warn({err: error, webhook_id: webhookId}, 'the in-flight record did not answer; trying again shortly')
    }
    const refused = wanted.filter((held) => !granted.has(held.id))
    if (refused.length > 0) {
      entry.blockedUntil = clock.now() + REMOTE_CAP_RETRY_MS
      holdings.sentOut(webhookId, -refused.length)
      if (breakers.gate(entry.webhook, now) === 'probe') breakers.probeUnused(entry.webhook)
      holdings.lanes.restore(refused)
      holdings.lanes.putBack(refused)
    }
    for (const held of wanted) {
      if (!granted.has(held.id)) continue
      entry.wire.add(held.id)
      this.parts.send(held, entry)
    }
    this.parts.refill(entry)
  }
}
