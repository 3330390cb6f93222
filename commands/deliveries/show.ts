import {Args} from '@oclif/core'

import {NotFoundError} from '../../src/shared/errors.js'
import {BaseCommand} from '../_shared/base-command.js'
import {inert, terminalSafeLines} from '../../src/ui/terminal-text.js'
import {terminalColumns} from '../../src/ui/terminal-width.js'
import {breakerText, labeledLines, stateLine} from '../../src/ui/webhook-text.js'
import {type DeliveryDetailReport, deliveryDetailReport, stateOf} from '../../src/webhooks/webhook-report.js'

export default class DeliveriesShow extends BaseCommand {
  static override description =
    "One delivery: where it stands (waiting, held, backing_off, delivering, or how it ended) and its true next attempt, its webhook's breaker and deliveries in flight, its event and lead, the payload sent, and every attempt (time, duration, status or error, first 1 KiB of the response)"
  static override examples = [
    '<%= config.bin %> deliveries show 5f2c9a7e-1b3d-4c8e-9f6a-2d4b8c1e7a90',
    '<%= config.bin %> deliveries show 5f2c9a7e-1b3d-4c8e-9f6a-2d4b8c1e7a90 --json',
  ]
  static override args = {deliveryId: Args.string({description: 'delivery id: its X-Service-Delivery UUID', required: true})}

  async run(): Promise<DeliveryDetailReport> {
    const {args} = await this.parse(DeliveriesShow)
    // Redis too: it holds which deliveries are on the wire, part of the state.
    const delivery = await this.withServices(
      ['deliveries'],
      async (services) => {
        const {delivery: found, event} = await services.deliveries.detail(args.deliveryId)
        const states = await services.deliveries.states([found])
        // A deleted webhook's deliveries are cancelled: nothing is scheduled any more.
        const scheduling = await services.deliveries.scheduling(found.webhookId).catch((error: unknown) => {
          if (error instanceof NotFoundError) return null
          throw error
        })
        return deliveryDetailReport(found, stateOf(states, found), event, scheduling)
      },
      {redis: true},
    )
    if (this.jsonEnabled()) return delivery
    // Errors and answers come from the receiver.
    const shown = inert({
      ...delivery,
      attempts: delivery.attempts.map((attempt) => ({...attempt, response_snippet: attempt.response_snippet?.replace(/\s+/g, ' ').slice(0, 200) ?? null})),
    })
    // One fact a line under its label, each wrapped to the terminal (80 columns when it reports none).
    const width = terminalColumns()
    const line = (label: string, text: string) => this.log(labeledLines(label, text, width))
    this.log(`${shown.id}  ${shown.status}`)
    line('created:', shown.created_at)
    line('state:', stateLine(shown.state))
    if (shown.next_attempt_at) line('next attempt:', shown.next_attempt_at)
    line('webhook:', shown.webhook_scheduling ? shown.webhook_id : `${shown.webhook_id} (deleted)`)
    if (shown.webhook_scheduling) {
      line('breaker:', breakerText(shown.webhook_scheduling.breaker))
      line('in flight:', `${shown.webhook_scheduling.in_flight} of ${shown.webhook_scheduling.max_in_flight}`)
    }
    line('event:', `${shown.event_type ?? '-'} ${shown.event_id}`)
    line('lead:', shown.lead_id ?? '-')
    if (shown.last_error) line('last error:', shown.last_error)
    for (const attempt of shown.attempts) {
      line(`  #${attempt.attempt}`, `${attempt.started_at} ${attempt.duration_ms}ms ${attempt.outcome} ${attempt.status_code ?? attempt.error}`)
      if (attempt.response_snippet) line('', attempt.response_snippet)
    }
    // What each attempt sent as the body's lead (signed afresh each time, with its own delivered_at).
    this.log(`payload (lead):\n${terminalSafeLines(JSON.stringify(delivery.payload, null, 2))}`)
    return delivery
  }
}
