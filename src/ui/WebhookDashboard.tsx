import {Box, Text} from 'ink'

import type {WebhookInspection} from '../webhooks/webhook-report.js'
import {BREAKER_COLORS, DELIVERY_STATE_COLORS} from './colors.js'
import {breakerText, capText, healthLine, STATE_WIDTH} from './webhook-text.js'

/** A compact dashboard of one webhook. */
export function WebhookDashboard({data}: {data: WebhookInspection}) {
  const {webhook, scheduling, health, recent} = data
  const full = scheduling.in_flight >= scheduling.max_in_flight
  return (
    <Box flexDirection="column">
      <Box borderStyle="round" borderColor={webhook.is_active ? 'green' : 'red'} flexDirection="column" paddingX={1}>
        <Text>
          <Text bold>{webhook.id}</Text>{' '}
          <Text color={webhook.is_active ? 'green' : 'red'}>
            {webhook.is_active ? 'active' : `disabled${webhook.disabled_reason ? `: ${webhook.disabled_reason}` : ''}`}
          </Text>
        </Text>
        <Text>{webhook.url}</Text>
        <Text dimColor>
          customer {webhook.customer_id} · {webhook.event_types.join(', ')} · timeout {webhook.timeout_seconds}s · {webhook.retry_attempts}{' '}
          {webhook.retry_attempts === 1 ? 'retry' : 'retries'}
          {webhook.description ? ` · ${webhook.description}` : ''}
        </Text>
      </Box>
      <Text>
        <Text bold>sending</Text> breaker <Text color={BREAKER_COLORS[scheduling.breaker.state]}>{breakerText(scheduling.breaker)}</Text> ·{' '}
        <Text color={full ? 'yellow' : undefined}>
          {scheduling.in_flight} of {capText(scheduling.max_in_flight, webhook.max_in_flight_override)} in flight
        </Text>
      </Text>
      <Text>
        <Text bold>health</Text> <Text color={health.consecutive_failures > 0 || health.failing > 0 ? 'red' : 'green'}>{healthLine(health)}</Text>
      </Text>
      <Text bold>recent deliveries</Text>
      {recent.length === 0 ? <Text dimColor>none</Text> : null}
      {recent.map((delivery) => (
        <Box key={delivery.id} flexDirection="column">
          <Text>
            <Text color={DELIVERY_STATE_COLORS[delivery.state]}>{delivery.state.padEnd(STATE_WIDTH)}</Text> {delivery.id}{' '}
            <Text dimColor>{delivery.created_at}</Text>
            {delivery.next_attempt_at ? <Text color="yellow"> next attempt {delivery.next_attempt_at}</Text> : null}
          </Text>
          {delivery.attempts.map((attempt) => (
            <Text key={attempt.attempt} dimColor>
              {'   '}#{attempt.attempt} {attempt.started_at} {attempt.status_code ?? attempt.error ?? '-'} {attempt.duration_ms}ms {attempt.outcome}
            </Text>
          ))}
        </Box>
      ))}
    </Box>
  )
}
