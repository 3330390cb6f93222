import {setTimeout as delay} from 'node:timers/promises'

import {Flags} from '@oclif/core'

import type {TailEntry} from '../../src/deliveries/delivery-tail.js'
import {parseDuration} from '../../src/shared/duration.js'
import {ValidationError} from '../../src/shared/errors.js'
import {renderDeliveryTail} from '../../src/ui/render.js'
import {terminalSafe} from '../../src/ui/terminal-text.js'
import {BaseCommand} from '../_shared/base-command.js'

const MIN_INTERVAL_MS = 200

export default class DeliveriesTail extends BaseCommand {
  static override description = `Follow webhook deliveries as they happen, until Ctrl-C: each delivery queued and each attempt finished, with its event type, lead, answer, latency, outcome and next retry

On a terminal a live view keeps the latest deliveries and counters; into a pipe each line is tab-separated: time, delivery, webhook, event type, lead, attempt (0: queued), answer, duration ms, outcome, next attempt.`
  static override examples = ['<%= config.bin %> deliveries tail', '<%= config.bin %> deliveries tail --webhook wh_3b1f0c2d9e8a', '<%= config.bin %> deliveries tail --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 | grep final']
  // A stream with no end: each line is the output.
  static override enableJsonFlag = false
  static override flags = {
    webhook: Flags.string({description: 'only this webhook (wh_...)'}),
    customer: Flags.string({description: 'only this customer (UUID)'}),
    interval: Flags.string({description: 'time between looks at the database (at least 200ms)', default: '1s'}),
    rows: Flags.integer({description: 'on a terminal: how many of the latest lines stay on screen', default: 20, min: 1, max: 200}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(DeliveriesTail)
    const intervalMs = parseDuration(flags.interval, 'interval')
    if (intervalMs < MIN_INTERVAL_MS) throw new ValidationError(`--interval must be at least ${MIN_INTERVAL_MS}ms`, 'interval')
    const stop = new AbortController()
    const interrupt = () => stop.abort()
    process.once('SIGINT', interrupt)
    process.once('SIGTERM', interrupt)
    try {
      await this.withServices(async (services) => {
        if (flags.webhook !== undefined) await services.webhooks.getById(flags.webhook)
        const tail = services.deliveries.tail({webhookId: flags.webhook, customerId: flags.customer}, Date.now())
        const following = flags.webhook ? `webhook ${flags.webhook}` : flags.customer ? `customer ${flags.customer}` : 'every webhook'
        const view = process.stdout.isTTY ? await renderDeliveryTail(following, flags.rows) : null
        try {
          while (!stop.signal.aborted) {
            const entries = await tail.poll()
            if (view) view.show(entries)
            else for (const entry of entries) process.stdout.write(`${tsvLine(entry)}\n`)
            await delay(intervalMs, undefined, {signal: stop.signal}).catch(() => undefined)
          }
        } finally {
          view?.done()
        }
      })
    } finally {
      process.off('SIGINT', interrupt)
      process.off('SIGTERM', interrupt)
    }
  }
}

function tsvLine(entry: TailEntry): string {
  const cells = [entry.at, entry.delivery_id, entry.webhook_id, entry.event_type ?? '-', entry.lead_id ?? '-', String(entry.attempt), entry.result, entry.duration_ms === null ? '-' : String(entry.duration_ms), entry.outcome, entry.next_attempt_at ?? '-']
  return cells.map((cell) => terminalSafe(cell.replace(/[\t\r\n]+/g, ' '))).join('\t')
}
