import {Box, Text} from 'ink'

import type {TailEntry} from '../deliveries/delivery-tail.js'
import {DELIVERY_STATE_COLORS} from './colors.js'
import {countsLine, tailCells, tailHeader, type TailCounts} from './tail-line.js'

const OUTCOME_COLORS: Record<string, string> = {queued: 'gray', success: 'green', retry: 'yellow', final: 'red', terminal: 'red'}
const OUTCOME = 6
const STATE = 7

/**
 * `leads deliveries tail` on a terminal: what it follows, the counters, then the latest deliveries
 * and attempts, newest last, one line each (tail-line.ts). Lines are cut rather than wrapped on a
 * terminal narrower than they are.
 */
export function DeliveryTailView({entries, counts, following}: {entries: readonly TailEntry[]; counts: TailCounts; following: string}) {
  return (
    <Box flexDirection="column">
      <Text wrap="truncate-end">
        <Text bold>following {following}</Text> <Text dimColor>(Ctrl-C stops)</Text>
      </Text>
      <Text wrap="truncate-end">{countsLine(counts)}</Text>
      <Text dimColor wrap="truncate-end">
        {tailHeader().join(' ').trimEnd()}
      </Text>
      {entries.length === 0 ? <Text dimColor>waiting for deliveries…</Text> : null}
      {entries.map((entry) => {
        const cells = tailCells(entry)
        return (
          <Text key={`${entry.delivery_id}:${entry.attempt}`} wrap="truncate-end">
            <Text dimColor>{cells[0]}</Text> {cells.slice(1, OUTCOME).join(' ')} <Text color={OUTCOME_COLORS[entry.outcome]}>{cells[OUTCOME]}</Text>{' '}
            <Text color={DELIVERY_STATE_COLORS[entry.state]}>{cells[STATE]}</Text>{' '}
            {cells
              .slice(STATE + 1)
              .join(' ')
              .trimEnd()}
          </Text>
        )
      })}
    </Box>
  )
}
