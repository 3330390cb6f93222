import {Box, Text} from 'ink'

import type {TailEntry} from '../deliveries/delivery-tail.js'
import {terminalSafe} from './terminal-text.js'

/** What the tail has seen since it started. */
export interface TailCounts {
  queued: number
  delivered: number
  retrying: number
  failed: number
}

const OUTCOME_COLORS: Record<string, string> = {queued: 'gray', success: 'green', retry: 'yellow', final: 'red', terminal: 'red'}

/** `leads deliveries tail` on a terminal: counters, then the latest deliveries and attempts, newest last. */
export function DeliveryTailView({entries, counts, following}: {entries: readonly TailEntry[]; counts: TailCounts; following: string}) {
  return (
    <Box flexDirection="column">
      <Text>
        <Text bold>following {following}</Text> · <Text color="gray">{counts.queued} queued</Text> · <Text color="green">{counts.delivered} delivered</Text> ·{' '}
        <Text color="yellow">{counts.retrying} to retry</Text> · <Text color="red">{counts.failed} failed</Text> <Text dimColor>(Ctrl-C stops)</Text>
      </Text>
      {entries.length === 0 ? <Text dimColor>waiting for deliveries…</Text> : null}
      {entries.map((entry) => (
        <Text key={`${entry.delivery_id}:${entry.attempt}`}>
          <Text dimColor>{entry.at.slice(11, 23)}</Text> {entry.delivery_id} {entry.event_type ?? '-'} lead {entry.lead_id ?? '-'}{' '}
          {entry.attempt === 0 ? '' : `#${entry.attempt} `}
          <Text color={OUTCOME_COLORS[entry.outcome]}>{terminalSafe(entry.result)}</Text>
          {entry.duration_ms === null ? '' : ` ${entry.duration_ms}ms`} <Text color={OUTCOME_COLORS[entry.outcome]}>{entry.outcome}</Text>
          {entry.next_attempt_at ? <Text dimColor> next {entry.next_attempt_at.slice(11, 19)}</Text> : null}
        </Text>
      ))}
    </Box>
  )
}

/** The counters after `entries`. */
export function countTail(counts: TailCounts, entries: readonly TailEntry[]): TailCounts {
  const next = {...counts}
  for (const entry of entries) {
    if (entry.outcome === 'queued') next.queued++
    else if (entry.outcome === 'success') next.delivered++
    else if (entry.outcome === 'retry') next.retrying++
    else next.failed++
  }
  return next
}
