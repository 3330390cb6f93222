import {Box, Text} from 'ink'

import type {PushSummary} from '../client/push.js'

/** Live state of `leads push`: rows sent and what became of them, and any rate-limit wait. */
export function PushProgress({summary, waitingSeconds}: {summary: PushSummary; waitingSeconds: number | null}) {
  return (
    <Box gap={2}>
      <Text color={waitingSeconds === null ? 'cyan' : 'yellow'}>{waitingSeconds === null ? 'pushing' : `rate limited, waiting ${waitingSeconds}s`}</Text>
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
