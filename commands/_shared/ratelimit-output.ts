import type {OverrideScope} from '../../src/ratelimit/limits.js'
import type {LimitsView} from '../../src/ratelimit/ratelimit-service.js'
import type {Usage} from '../../src/ratelimit/request-limiter.js'
import {isoTime} from '../../src/shared/clock.js'
import {ValidationError} from '../../src/shared/errors.js'
import {uuidFlag} from './base-command.js'

/** --customer or --key: which override a `leads ratelimit` command is about. */
export const scopeFlags = {
  customer: uuidFlag({description: 'customer id (UUID)', exactlyOne: ['customer', 'key']}),
  key: uuidFlag({description: 'key id (UUID)', exactlyOne: ['customer', 'key']}),
}

export function scopeOf(flags: {customer?: string; key?: string}): OverrideScope {
  if (flags.customer !== undefined) return {type: 'customer', id: flags.customer}
  if (flags.key !== undefined) return {type: 'key', id: flags.key}
  throw new ValidationError('give --customer or --key', 'customer')
}

export interface LimitsOutput {
  scope: OverrideScope
  override: {per_minute: number | null; per_hour: number | null; bulk_per_minute: number | null; updated_at: string} | null
  effective: {per_minute: number; per_hour: number; bulk_per_minute: number}
  /** An internal key: exempt from every limit, `effective` included. */
  exempt: boolean
  /** Requests counted in the key's current windows (keys only, with Redis). */
  usage?: {minute: number; hour: number; bulk: number}
}

export function limitsOutput(view: LimitsView, usage?: Usage): LimitsOutput {
  return {
    scope: view.scope,
    override: view.override && {
      per_minute: view.override.perMinute,
      per_hour: view.override.perHour,
      bulk_per_minute: view.override.bulkPerMinute,
      updated_at: isoTime(view.override.updatedAt),
    },
    effective: {per_minute: view.effective.perMinute, per_hour: view.effective.perHour, bulk_per_minute: view.effective.bulkPerMinute},
    exempt: view.exempt,
    ...(usage ? {usage} : {}),
  }
}

/** Plain lines for a terminal or a pipe. */
export function formatLimits(output: LimitsOutput): string {
  const value = (n: number | null | undefined) => (n === null || n === undefined ? 'inherited' : String(n))
  const lines = [
    `${output.scope.type} ${output.scope.id}`,
    `  override:  ${output.override ? `per-minute ${value(output.override.per_minute)}, per-hour ${value(output.override.per_hour)}, bulk-per-minute ${value(output.override.bulk_per_minute)}` : 'none'}`,
    output.exempt
      ? '  effective: none: an internal key is exempt from every rate limit'
      : `  effective: per-minute ${output.effective.per_minute}, per-hour ${output.effective.per_hour}, bulk-per-minute ${output.effective.bulk_per_minute}`,
  ]
  if (output.usage) lines.push(`  used now:  minute ${output.usage.minute}, hour ${output.usage.hour}, bulk ${output.usage.bulk}`)
  return lines.join('\n')
}
