import type {CircuitBreakers} from './circuit-breaker.js'
import type {ClaimedDelivery, DeliveryClaims, SendingWebhook} from './delivery-claims.js'
import type {WebhookEntry, WorkerHoldings} from './worker-holdings.js'

/**
 * Keeps a worker's copy of the webhooks it holds deliveries of up to date: a rotated secret signs
 * the next attempt, a changed URL or setting applies to it, another worker's breaker decision
 * holds or frees the lane, and a deleted or disabled webhook's deliveries end here as cancelled.
 */
export class HeldWebhooks {
  constructor(
    private readonly holdings: WorkerHoldings,
    private readonly claims: DeliveryClaims,
    private readonly breakers: CircuitBreakers,
    private readonly wake: () => void,
  ) {}

  /** The webhook's entry, made or brought up to date from what a claim just read (claims leave out inactive webhooks). */
  entryFor(claimed: ClaimedDelivery): WebhookEntry {
    const entry = this.holdings.webhooks.get(claimed.webhook.id)
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
      this.holdings.webhooks.set(made.webhook.id, made)
      return made
    }
    if (entry.webhook.updatedAt !== claimed.webhook.updatedAt || entry.secrets.previous !== claimed.secrets.previous) void this.apply(entry, claimed)
    return entry
  }

  /** Reads every held webhook again and applies it; forgets the webhooks with nothing left in this worker. */
  async refresh(): Promise<void> {
    const {webhooks, lanes} = this.holdings
    const current = await this.claims.currentWebhooks([...webhooks.keys()])
    for (const [webhookId, entry] of webhooks) {
      await this.apply(entry, current.get(webhookId))
      if (lanes.size(webhookId) === 0 && entry.onTheWire === 0 && entry.done.length === 0) {
        webhooks.delete(webhookId)
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
  async apply(entry: WebhookEntry, latest: SendingWebhook | undefined): Promise<boolean> {
    if (latest?.webhook.isActive) {
      entry.webhook = this.breakers.settled(latest.webhook.id) ? latest.webhook : {...latest.webhook, breaker: entry.webhook.breaker}
      entry.secrets = latest.secrets
      return true
    }
    const dropped = this.holdings.lanes.drop(entry.webhook.id)
    for (const held of dropped) this.holdings.letGo(held.id)
    await this.claims.settle(
      dropped.map((held) => held.id),
      'cancelled',
      latest ? 'webhook disabled' : 'webhook deleted',
    )
    return false
  }
}
