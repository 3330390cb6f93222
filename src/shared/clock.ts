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

/**
 * The first epoch millisecond at or after a date-time text. Date.parse drops digits past the
 * millisecond, which would move an "at or after" bound (created_since, updated_since, --since)
 * back into the millisecond before it and take in the leads stamped there.
 */
export function firstMillisecondAtOrAfter(text: string): number {
  const ms = Date.parse(text)
  const pastMillisecond = /\.\d{3}(\d+)/.exec(text)?.[1] ?? ''
  return /[1-9]/.test(pastMillisecond) ? ms + 1 : ms
}
