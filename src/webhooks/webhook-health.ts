import type {Logger} from '../log/logger.js'
import type {Clock} from '../shared/clock.js'
import {AUTO_DISABLE_AFTER_MS} from './webhook-types.js'
import type {WebhooksStore} from './webhooks-store.js'

/**
 * A webhook's delivery health: consecutive failures, since when it fails, and the rule that a
 * webhook whose every delivery failed for five days is disabled. (A success clears the streak in
 * the attempt's own record: AttemptLog.)
 */
export class WebhookHealth {
  constructor(
    private readonly store: WebhooksStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Records a delivery that failed for good; disables the webhook once it has failed for five days. */
  async deliveryFailed(webhookId: string): Promise<void> {
    const now = this.clock.now()
    const webhook = await this.store.recordFailure(webhookId, now)
    if (!webhook?.isActive || webhook.failingSince === null || now - webhook.failingSince < AUTO_DISABLE_AFTER_MS) return
    await this.store.update(webhook.customerId, webhook.id, {
      isActive: false,
      disabledReason: 'every delivery failed for 5 days',
      disabledBy: 'system',
      updatedAt: now,
    })
    this.logger.warn({webhook_id: webhook.id, customer_id: webhook.customerId}, 'webhook disabled after 5 days of failed deliveries')
  }
}
