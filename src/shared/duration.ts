import {ValidationError} from './errors.js'

const UNIT_MS = {s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000} as const

/** Parses durations like `30s`, `15m`, `1h`, `90d` into milliseconds. */
export function parseDuration(text: string, param: string): number {
  const match = /^(\d+)([smhd])$/.exec(text.trim())
  if (!match) throw new ValidationError(`${param} must be a duration like 30s, 15m, 1h or 90d, got "${text}"`, param)
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]
}
