import {Text} from 'ink'
import {useEffect, useState} from 'react'

/** A wait of the API client, as a moment to count down to. */
export interface Waiting {
  reason: 'rate limited' | 'retrying'
  until: number
}

/** "rate limited, resuming in 12s", ticking down every second; the caller clears it when the wait ends. */
export function WaitCountdown({waiting}: {waiting: Waiting}) {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [waiting.until])
  const seconds = Math.max(0, Math.ceil((waiting.until - now) / 1000))
  return <Text color="yellow">{`${waiting.reason}, resuming in ${seconds}s`}</Text>
}
