import {Box, Text} from 'ink'

import type {PullProgress as Progress} from '../client/pull.js'

/** Live state of `leads pull`: pages, leads, rate-limit budget and how far the sync has come. */
export function PullProgress({progress}: {progress: Progress}) {
  const budget = progress.rateLimit ? `${progress.rateLimit.remaining}/${progress.rateLimit.limit}` : 'n/a'
  return (
    <Box gap={2}>
      <Text color={progress.caughtUp ? 'green' : 'cyan'}>{progress.caughtUp ? 'up to date' : 'pulling'}</Text>
      <Text>
        {progress.pages} pages · {progress.leads.toLocaleString('en')} leads
      </Text>
      <Text dimColor>rate limit {budget}</Text>
      <Text dimColor>at {progress.position ?? 'start'}</Text>
    </Box>
  )
}
