import {Args, Flags} from '@oclif/core'

import {DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT_LIMIT} from '../../src/webhooks/webhook-types.js'
import {type WebhookReport, webhookReport} from '../../src/webhooks/webhook-report.js'
import {BaseCommand} from '../_shared/base-command.js'

export default class WebhooksLimit extends BaseCommand {
  static override description = `Cap how many of a webhook's deliveries are in flight at once (1 to ${MAX_IN_FLIGHT_LIMIT}; default ${DEFAULT_MAX_IN_FLIGHT}), or --reset it to the default`
  static override examples = [
    '<%= config.bin %> webhooks limit wh_3b1f0c2d9e8a --max-in-flight 2',
    '<%= config.bin %> webhooks limit wh_3b1f0c2d9e8a --reset --json',
  ]
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}
  static override flags = {
    // Bounds are checked by the service, so an out-of-range value gets its one-line error and hint.
    'max-in-flight': Flags.integer({description: `deliveries in flight at once, 1 to ${MAX_IN_FLIGHT_LIMIT}`, exactlyOne: ['max-in-flight', 'reset']}),
    reset: Flags.boolean({description: `back to the default (${DEFAULT_MAX_IN_FLIGHT})`, exactlyOne: ['max-in-flight', 'reset']}),
  }

  async run(): Promise<WebhookReport> {
    const {args, flags} = await this.parse(WebhooksLimit)
    const cap = flags.reset ? null : flags['max-in-flight']!
    const webhook = webhookReport(await this.withServices(['webhooks'], (services) => services.webhooks.setMaxInFlight(args.webhookId, cap)))
    const source = webhook.max_in_flight_override === null ? 'the default' : 'set by an operator'
    this.log(`Webhook ${webhook.id}: at most ${webhook.max_in_flight} deliveries in flight at once (${source}).`)
    return webhook
  }
}
