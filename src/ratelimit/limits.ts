/** Requests allowed per window for one API key. */
export interface Limits {
  perMinute: number
  perHour: number
  bulkPerMinute: number
}

/** The spec's defaults: 60 per minute and 1,000 per hour; bulk 10 per minute on its own counter. */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({perMinute: 60, perHour: 1000, bulkPerMinute: 10})

/** Requests without a valid key, counted per client address, so token guessing is throttled too. */
export const ANONYMOUS_PER_MINUTE = 100

export type OverrideScope = {type: 'customer'; id: string} | {type: 'key'; id: string}

/** An operator's override; a missing value falls through to the customer override, then the default. */
export interface LimitOverride {
  scope: OverrideScope
  perMinute: number | null
  perHour: number | null
  bulkPerMinute: number | null
  updatedAt: number
}

/** A key override beats a customer override beats the default, field by field. */
export function effectiveLimits(keyOverride: LimitOverride | null, customerOverride: LimitOverride | null): Limits {
  return {
    perMinute: keyOverride?.perMinute ?? customerOverride?.perMinute ?? DEFAULT_LIMITS.perMinute,
    perHour: keyOverride?.perHour ?? customerOverride?.perHour ?? DEFAULT_LIMITS.perHour,
    bulkPerMinute: keyOverride?.bulkPerMinute ?? customerOverride?.bulkPerMinute ?? DEFAULT_LIMITS.bulkPerMinute,
  }
}
