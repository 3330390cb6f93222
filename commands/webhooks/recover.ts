import {Args, Flags} from '@oclif/core'

import {checkRecoverSince} from '../../src/deliveries/recover.js'
import {isoTime} from '../../src/shared/clock.js'
import {parseSince} from '../../src/shared/duration.js'
import {BaseCommand, confirmFlags} from '../_shared/base-command.js'

/** What `leads webhooks recover` reports. */
interface RecoverOutput {
  webhook_id: string
  customer_id: string
  since: string
  queued: number
}

export default class WebhooksRecover extends BaseCommand {
  static override description =
    "Queue a webhook's failed deliveries created since a time (at most 7 days back) again: the same X-Service-Delivery, fresh attempts and signatures. What a customer does with POST /lead-webhooks/{id}/recover"
  static override examples = [
    '<%= config.bin %> webhooks recover wh_3b1f0c2d9e8a --since 2h --yes',
    '<%= config.bin %> webhooks recover wh_3b1f0c2d9e8a --since 2026-11-24T09:00:00Z --yes --json',
  ]
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {
    since: Flags.string({
      description: 'failed deliveries created at or after this: an ISO-8601 time, or a duration ago (30m, 2h, 1d); at most 7d',
      required: true,
    }),
    ...confirmFlags,
  }

  async run(): Promise<RecoverOutput> {
    const {args, flags} = await this.parse(WebhooksRecover)
    const since = parseSince(flags.since, 'since', Date.now())
    // With Redis the deliveries go straight to the workers' stream; without, sweepers find them in the database.
    const {webhook, queued} = await this.withServices(
      ['deliveries', 'webhooks'],
      async (services) => {
        const webhook = await services.webhooks.getById(args.webhookId)
        // An unknown webhook or a since out of range is refused before the question, not after it.
        checkRecoverSince(since, Date.now())
        await this.confirm(`Send the failed deliveries of ${webhook.id} created since ${isoTime(since)} again?`, flags.yes)
        return {webhook, queued: await services.deliveries.recover(webhook.customerId, webhook.id, since)}
      },
      {redis: true},
    )
    this.log(
      `Queued ${queued} failed deliver${queued === 1 ? 'y' : 'ies'} of ${webhook.id} created since ${isoTime(since)} again; a running daemon sends them within a few seconds.`,
    )
    return {webhook_id: webhook.id, customer_id: webhook.customerId, since: isoTime(since), queued}
  }
}
