import {Args} from '@oclif/core'

import {AppError} from '../../src/shared/errors.js'
import {terminalSafe} from '../../src/ui/terminal-text.js'
import {BaseCommand} from '../_shared/base-command.js'

/** What `leads webhooks test` reports. */
interface TestOutput {
  webhook_id: string
  url: string
  /** A disabled webhook is tested too (the check before enabling it), and the output says so. */
  is_active: boolean
  disabled_reason: string | null
  delivery_id: string
  status_code: number | null
  error: string | null
  duration_ms: number
  response_snippet: string | null
}

export default class WebhooksTest extends BaseCommand {
  static override description =
    'Send a signed sample lead.created to a webhook now and show what its receiver answered (nothing is recorded or retried); exits 1 unless it answered 2xx. A disabled webhook is tested too, the check before enabling it, with a note on stderr that it is disabled'
  static override examples = ['<%= config.bin %> webhooks test wh_3b1f0c2d9e8a', '<%= config.bin %> webhooks test wh_3b1f0c2d9e8a --json']
  static override args = {webhookId: Args.string({description: 'webhook id (wh_...)', required: true})}

  async run(): Promise<TestOutput> {
    const {args} = await this.parse(WebhooksTest)
    const {webhook, deliveryId, result} = await this.withServices(['webhookTest'], (services) => services.webhookTest.send(args.webhookId))
    // Sent all the same: testing a fixed receiver before enabling its webhook is what this is for.
    if (!webhook.isActive) {
      const reason = webhook.disabledReason ? ` (${webhook.disabledReason})` : ''
      const note = `note: webhook ${webhook.id} is disabled${reason}: this test was sent anyway, but events get no deliveries until \`leads webhooks enable ${webhook.id}\``
      process.stderr.write(`${terminalSafe(note)}\n`)
    }
    const output: TestOutput = {
      webhook_id: webhook.id,
      url: webhook.url,
      is_active: webhook.isActive,
      disabled_reason: webhook.disabledReason,
      delivery_id: deliveryId,
      status_code: result.kind === 'response' ? result.statusCode : null,
      error: result.kind === 'response' ? null : result.error,
      duration_ms: result.durationMs,
      response_snippet: result.kind === 'response' ? result.snippet : null,
    }
    const answer = output.status_code === null ? `no answer: ${output.error}` : `HTTP ${output.status_code}`
    this.log(terminalSafe(`POST ${webhook.url} (X-Service-Delivery ${deliveryId}) → ${answer} in ${output.duration_ms} ms`))
    if (output.response_snippet) this.log(terminalSafe(`  ${output.response_snippet.replace(/\s+/g, ' ').slice(0, 300)}`))
    const delivered = output.status_code !== null && output.status_code >= 200 && output.status_code < 300
    if (!delivered) {
      const message = `the receiver did not acknowledge the test event (${answer})`
      // Under --json the result is still the output (stdout), and the failure is said as every failure is (stderr).
      if (this.jsonEnabled())
        this.writeJsonError({type: 'invalid_request_error', code: 400, message, hint: 'it must answer 2xx; see status_code and response_snippet'}, 1)
      else throw new AppError('invalid_request_error', 400, message, 'it must answer 2xx; see the answer above')
    }
    return output
  }
}
