/** Source of the current time in epoch milliseconds; tests inject their own. */
export interface Clock {
  now(): number
}

export const systemClock: Clock = {now: () => Date.now()}

/** ISO-8601 UTC text of an epoch-milliseconds value, as every API timestamp is written. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString()
}

/** Same as isoTime, keeping null. */
export function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms)
}
