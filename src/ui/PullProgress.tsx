import {Box, Text} from 'ink'

import type {PullProgress as Progress} from '../client/pull.js'
import {WaitCountdown, type Waiting} from './WaitCountdown.js'

/** Live state of `leads pull`: pages, leads, rate-limit budget, how far the sync has come, and any wait counted down. */
export function PullProgress({progress, waiting = null}: {progress: Progress; waiting?: Waiting | null}) {
  const budget = progress.rateLimit ? `${progress.rateLimit.remaining}/${progress.rateLimit.limit}` : 'n/a'
  return (
    <Box gap={2}>
      {waiting ? <WaitCountdown waiting={waiting} /> : <Text color={progress.caughtUp ? 'green' : 'cyan'}>{progress.caughtUp ? 'up to date' : 'pulling'}</Text>}
      <Text>
        {progress.pages} pages · {progress.leads.toLocaleString('en')} leads
      </Text>
      <Text dimColor>rate limit {budget}</Text>
      <Text dimColor>at {progress.position ?? 'start'}</Text>
    </Box>
  )
}
