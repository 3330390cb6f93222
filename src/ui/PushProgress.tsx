import {Box, Text} from 'ink'

import type {PushSummary} from '../client/push.js'
import {WaitCountdown, type Waiting} from './WaitCountdown.js'

/** Live state of `leads push`: rows sent and what became of them, and any wait counted down. */
export function PushProgress({summary, waiting}: {summary: PushSummary; waiting: Waiting | null}) {
  return (
    <Box gap={2}>
      {waiting ? <WaitCountdown waiting={waiting} /> : <Text color="cyan">pushing</Text>}
      <Text>
        {summary.received.toLocaleString('en')} rows · {summary.chunks} requests
      </Text>
      <Text color="green">{summary.created} created</Text>
      <Text>{summary.updated} updated</Text>
      <Text dimColor>{summary.skipped} skipped</Text>
      <Text color={summary.failed > 0 ? 'red' : undefined}>{summary.failed} failed</Text>
    </Box>
  )
}
