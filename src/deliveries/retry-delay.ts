/**
 * The wait before a delivery's next attempt after its `failedAttempts`-th failed one: the base
 * doubled per failure, times a random factor in [1, 2) so retries of one outage spread out, and
 * never more than `maxMs` (the spec's 30 s cap on backoff).
 */
export function retryDelayMs(failedAttempts: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  return Math.min(maxMs, Math.round(baseMs * 2 ** (failedAttempts - 1) * (1 + random())))
}
