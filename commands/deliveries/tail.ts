import {setTimeout as delay} from 'node:timers/promises'

import {Flags} from '@oclif/core'

import type {TailEntry} from '../../src/deliveries/delivery-tail.js'
import {parseDuration} from '../../src/shared/duration.js'
import {ValidationError} from '../../src/shared/errors.js'
import {renderDeliveryTail} from '../../src/ui/render.js'
import {terminalSafe, terminalSafeJson} from '../../src/ui/terminal-text.js'
import {BaseCommand, uuidFlag} from '../_shared/base-command.js'

const MIN_INTERVAL_MS = 200

export default class DeliveriesTail extends BaseCommand {
  static override description = `Follow webhook deliveries as they happen, until Ctrl-C: each delivery queued and each attempt finished, with its webhook, event type, lead, answer, latency, outcome, and where the delivery stands now (waiting, held, backing_off, delivering, or how it ended) with its next attempt

On a terminal a live view keeps the counters (deliveries queued, succeeded and failed; attempts and retries) and the latest lines, one per line of an 80-column terminal, with ids shortened. Into a pipe each line is tab-separated, every value whole: time, delivery, webhook, event type, lead, attempt (0: queued), answer, duration ms, outcome, next attempt, state. With --json each line is one JSON object (NDJSON).`
  static override examples = [
    '<%= config.bin %> deliveries tail',
    '<%= config.bin %> deliveries tail --webhook wh_3b1f0c2d9e8a',
    '<%= config.bin %> deliveries tail --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 | grep final',
    '<%= config.bin %> deliveries tail --json | jq -c \'select(.state == "held")\'',
  ]
  // A stream with no end: --json is a line of its own per entry (NDJSON), not one value at the end.
  static override enableJsonFlag = false
  static override flags = {
    json: Flags.boolean({description: 'one JSON object per line (NDJSON), with whole ids, the state and the next attempt'}),
    webhook: Flags.string({description: 'only this webhook (wh_...)'}),
    customer: uuidFlag({description: 'only this customer (UUID)'}),
    interval: Flags.string({description: 'time between looks at the database (at least 200ms)', default: '1s'}),
    rows: Flags.integer({description: 'on a terminal: how many of the latest lines stay on screen', default: 20, min: 1, max: 200}),
  }

  // Its --json is a flag of its own, so oclif's jsonEnabled() never sees it; failures follow the flag all the same.
  protected override failsAsJson(): boolean {
    const end = this.argv.indexOf('--')
    return (end === -1 ? this.argv : this.argv.slice(0, end)).includes('--json')
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(DeliveriesTail)
    const intervalMs = parseDuration(flags.interval, 'interval')
    if (intervalMs < MIN_INTERVAL_MS) throw new ValidationError(`--interval must be at least ${MIN_INTERVAL_MS}ms`, 'interval')
    const stop = new AbortController()
    const interrupt = () => stop.abort()
    // Kept until the tail has stopped, not once: Ink's exit hook kills the process with the signal
    // again when it finds no other listener, which would skip the clean stop and exit 130.
    process.on('SIGINT', interrupt)
    process.on('SIGTERM', interrupt)
    try {
      await this.withServices(
        ['deliveries', 'webhooks', 'customers'],
        async (services) => {
          if (flags.webhook !== undefined) await services.webhooks.getById(flags.webhook)
          if (flags.customer !== undefined) await services.customers.get(flags.customer)
          const tail = services.deliveries.tail({webhookId: flags.webhook, customerId: flags.customer}, Date.now())
          const following = terminalSafe(flags.webhook ? `webhook ${flags.webhook}` : flags.customer ? `customer ${flags.customer}` : 'every webhook')
          const view = process.stdout.isTTY && !flags.json ? await renderDeliveryTail(following, flags.rows) : null
          const line = flags.json ? jsonLine : tsvLine
          try {
            while (!stop.signal.aborted) {
              const entries = await tail.poll()
              if (view) view.show(entries)
              else for (const entry of entries) process.stdout.write(`${line(entry)}\n`)
              await delay(intervalMs, undefined, {signal: stop.signal}).catch(() => undefined)
            }
          } finally {
            view?.done()
          }
        },
        {redis: true},
      )
    } finally {
      process.off('SIGINT', interrupt)
      process.off('SIGTERM', interrupt)
    }
  }
}

function tsvLine(entry: TailEntry): string {
  const cells = [
    entry.at,
    entry.delivery_id,
    entry.webhook_id,
    entry.event_type ?? '-',
    entry.lead_id ?? '-',
    String(entry.attempt),
    entry.result,
    entry.duration_ms === null ? '-' : String(entry.duration_ms),
    entry.outcome,
    entry.next_attempt_at ?? '-',
    // Last, so the columns scripts already cut by number keep their places.
    entry.state,
  ]
  return cells.map((cell) => terminalSafe(cell.replace(/[\t\r\n]+/g, ' '))).join('\t')
}

/** An entry as one line of JSON, with what a terminal would act on escaped (the same JSON once parsed). */
function jsonLine(entry: TailEntry): string {
  return terminalSafeJson(JSON.stringify(entry))
}
