import {firstMillisecondAtOrAfter, isoTime} from './clock.js'
import {ValidationError} from './errors.js'
import {printable} from './text.js'

const UNIT_MS = {ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000} as const

/** The longest duration accepted (ten years): anything longer overflows what a timestamp column and a date can hold. */
export const MAX_DURATION_MS = 3650 * UNIT_MS.d

/** Parses durations like `500ms`, `30s`, `15m`, `1h`, `90d` (at most 3650d) into milliseconds. */
export function parseDuration(text: string, param: string): number {
  const match = /^(\d{1,10})(ms|[smhd])$/.exec(text.trim())
  if (!match) throw new ValidationError(`${param} must be a duration like 30s, 15m, 1h or 90d, got "${printable(text)}"`, param)
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]
  if (ms > MAX_DURATION_MS) throw new ValidationError(`${param} must be at most 3650d (ten years), got "${text.trim()}"`, param)
  return ms
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/i

/**
 * A `--since` point in time: an ISO-8601 date or date-time with its offset (`2026-11-24`,
 * `2026-11-24T09:00:00Z`), or a duration before `now` (`30m`, `2h`, `1d`). Epoch milliseconds.
 */
export function parseSince(text: string, param: string, now: number): number {
  const trimmed = text.trim()
  if (/^\d+(ms|[smhd])$/.test(trimmed)) return now - parseDuration(trimmed, param)
  const ms = ISO_DATE_TIME.test(trimmed) ? firstMillisecondAtOrAfter(trimmed) : Number.NaN
  if (!Number.isFinite(ms)) {
    throw new ValidationError(`${param} must be an ISO-8601 time like 2026-11-24T09:00:00Z, or a duration ago like 2h or 1d, got "${printable(text)}"`, param)
  }
  // A pull would save a position that shows nothing until then, with no word of why.
  if (ms > now) throw new ValidationError(`${param} must not be in the future (it is ${isoTime(ms)}, the time here is ${isoTime(now)})`, param)
  return ms
}
