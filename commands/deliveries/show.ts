import {Args} from '@oclif/core'

import {BaseCommand} from '../_shared/base-command.js'
import {type DeliveryReport, deliveryReport} from '../../src/webhooks/webhook-report.js'

export default class DeliveriesShow extends BaseCommand {
  static override description = 'One delivery with every attempt (time, duration, status or error, first 1 KiB of the response)'
  static override args = {deliveryId: Args.string({description: 'delivery id: its X-Service-Delivery UUID', required: true})}

  async run(): Promise<DeliveryReport> {
    const {args} = await this.parse(DeliveriesShow)
    const delivery = deliveryReport(await this.withServices((services) => services.deliveries.show(args.deliveryId)))
    this.log(`${delivery.id}  ${delivery.status}  webhook ${delivery.webhook_id}  created ${delivery.created_at}`)
    if (delivery.last_error) this.log(`last error: ${delivery.last_error}`)
    for (const attempt of delivery.attempts) {
      this.log(`  #${attempt.attempt} ${attempt.started_at} ${attempt.status_code ?? attempt.error} ${attempt.duration_ms}ms ${attempt.outcome}`)
      if (attempt.response_snippet) this.log(`     ${attempt.response_snippet.replace(/\s+/g, ' ').slice(0, 200)}`)
    }
    return delivery
  }
}
