import type {WebhookInspection} from '../webhooks/webhook-report.js'

/** The same content as plain text, for output that is not a terminal. */
export function formatWebhookInspection({webhook, health, recent}: WebhookInspection): string {
  const lines = [
    `${webhook.id}  ${webhook.is_active ? 'active' : `disabled${webhook.disabled_reason ? `: ${webhook.disabled_reason}` : ''}`}`,
    `url:       ${webhook.url}`,
    `customer:  ${webhook.customer_id}`,
    `events:    ${webhook.event_types.join(', ')}  timeout ${webhook.timeout_seconds}s  retries ${webhook.retry_attempts}`,
    `about:     ${webhook.description ?? '-'}`,
    `health:    ${healthLine(health)}`,
    'recent deliveries:',
  ]
  if (recent.length === 0) lines.push('  none')
  for (const delivery of recent) {
    lines.push(`  ${delivery.status.padEnd(10)} ${delivery.id} ${delivery.created_at}${delivery.next_attempt_at ? `  next attempt ${delivery.next_attempt_at}` : ''}`)
    for (const attempt of delivery.attempts) {
      lines.push(`    #${attempt.attempt} ${attempt.started_at} ${attempt.status_code ?? attempt.error ?? '-'} ${attempt.duration_ms}ms ${attempt.outcome}`)
    }
  }
  return lines.join('\n')
}

/** Health in one line: the success rate over the fixed window, the failures still being retried, the streak. */
export function healthLine(health: WebhookInspection['health']): string {
  const rate = health.success_rate === null ? 'n/a' : `${Math.round(health.success_rate * 100)}%`
  return `success ${rate} of the last ${health.window} deliveries (${health.delivered} ok, ${health.failed} failed, ${health.failing} failing now), streak ${health.consecutive_failures}, last ${health.last_status ?? 'none'}, last success ${health.last_success_at ?? 'never'}`
}
