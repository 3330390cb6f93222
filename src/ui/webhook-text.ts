import wrapAnsi from 'wrap-ansi'

import type {DeliveryState} from '../deliveries/delivery-state.js'
import type {BreakerReport, SchedulingReport, WebhookInspection} from '../webhooks/webhook-report.js'

/** The same content as plain text, for output that is not a terminal. */
export function formatWebhookInspection({webhook, scheduling, health, recent}: WebhookInspection): string {
  const lines = [
    `${webhook.id}  ${webhook.is_active ? 'active' : `disabled${webhook.disabled_reason ? `: ${webhook.disabled_reason}` : ''}`}`,
    `url:       ${webhook.url}`,
    `customer:  ${webhook.customer_id}`,
    `events:    ${webhook.event_types.join(', ')}  timeout ${webhook.timeout_seconds}s  retries ${webhook.retry_attempts}`,
    `about:     ${webhook.description ?? '-'}`,
    `sending:   ${schedulingLine(scheduling, webhook.max_in_flight_override)}`,
    `health:    ${healthLine(health)}`,
    'recent deliveries:',
  ]
  if (recent.length === 0) lines.push('  none')
  for (const delivery of recent) {
    lines.push(
      `  ${delivery.state.padEnd(STATE_WIDTH)} ${delivery.id} ${delivery.created_at}${delivery.next_attempt_at ? `  next attempt ${delivery.next_attempt_at}` : ''}`,
    )
    for (const attempt of delivery.attempts) {
      lines.push(`    #${attempt.attempt} ${attempt.started_at} ${attempt.status_code ?? attempt.error ?? '-'} ${attempt.duration_ms}ms ${attempt.outcome}`)
    }
  }
  return lines.join('\n')
}

/** The widest state, `backing_off`: states line up in a column. */
export const STATE_WIDTH = 11

/** Health in one line: the success rate over the fixed window, the failures still being retried, the streak. */
export function healthLine(health: WebhookInspection['health']): string {
  const rate = health.success_rate === null ? 'n/a' : `${Math.round(health.success_rate * 100)}%`
  return `success ${rate} of the last ${health.window} deliveries (${health.delivered} ok, ${health.failed} failed, ${health.failing} failing now), streak ${health.consecutive_failures}, last ${health.last_status ?? 'none'}, last success ${health.last_success_at ?? 'never'}`
}

/**
 * How a webhook is sending, in one line: its breaker, then its deliveries on the wire out of its
 * cap; with the operator's `override` (null: none) the cap says where it comes from.
 */
export function schedulingLine(scheduling: SchedulingReport, override?: number | null): string {
  return `breaker ${breakerText(scheduling.breaker)} · ${scheduling.in_flight} of ${capText(scheduling.max_in_flight, override)} in flight`
}

/**
 * A breaker in words: closed, open until when, or half-open with its probe out. An open breaker
 * whose cool-down is over stays open until a delivery is taken, and that delivery is the probe.
 */
export function breakerText(breaker: BreakerReport, nowMs = Date.now()): string {
  if (breaker.state === 'open') {
    const opened = breaker.opened_at ? ` (opened ${breaker.opened_at})` : ''
    if (breaker.until !== null && Date.parse(breaker.until) <= nowMs) return `open${opened}, cool-down over: the next delivery is the probe`
    return `open until ${breaker.until ?? '?'}${opened}, then one probe`
  }
  if (breaker.state === 'half_open') return `half-open: one probe on the wire${breaker.until ? ` (its claim holds until ${breaker.until})` : ''}`
  return 'closed'
}

/** A webhook's in-flight cap, saying whether it is the default or the operator's when `override` is known (null: none). */
export function capText(cap: number, override?: number | null): string {
  if (override === undefined) return String(cap)
  return override === null ? `${cap} (default cap)` : `${cap} (cap set by an operator)`
}

/** Where a delivery stands in words, with what the state means while it is not ended. */
export function stateLine(state: DeliveryState): string {
  const meaning = UNENDED_MEANINGS[state]
  return meaning ? `${state} (${meaning})` : state
}

/** Room for the longest label of a labeled line (`next attempt:`) and a space. */
const LABEL_WIDTH = 14

/**
 * `text` after its label, wrapped at spaces to `width` columns; the lines after the first start
 * under the first one's text. A word longer than the room left (a URL) is cut where the line ends.
 */
export function labeledLines(label: string, text: string, width: number): string {
  const room = Math.max(width - LABEL_WIDTH, 20)
  return wrapAnsi(text, room, {hard: true, trim: true})
    .split('\n')
    .map((part, index) => `${(index === 0 ? label : '').padEnd(LABEL_WIDTH)}${part}`.trimEnd())
    .join('\n')
}

const UNENDED_MEANINGS: Partial<Record<DeliveryState, string>> = {
  waiting: "due; waits for a worker's free slot or its webhook's in-flight cap",
  held: "its webhook's circuit breaker is open: nothing is sent until the probe",
  backing_off: 'an attempt failed; the next one is scheduled',
  delivering: 'an attempt is on the wire',
}
