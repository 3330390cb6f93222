import {bodyAjv, compileOnFirstUse, toValidationError} from '../shared/ajv.js'
import {firstMillisecondAtOrAfter, isoTime} from '../shared/clock.js'
import {ValidationError} from '../shared/errors.js'

/** How far back a recover reaches: failed deliveries created up to 7 days before the request. */
export const RECOVER_WINDOW_MS = 7 * 86_400_000

/** Body of POST /lead-webhooks/{id}/recover. */
export const RECOVER_REQUEST_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['since'],
  properties: {
    since: {
      type: 'string',
      format: 'date-time',
      description: 'Failed deliveries created at or after this time are queued again; at most 7 days ago, not in the future.',
    },
  },
} as const

/** Response of POST /lead-webhooks/{id}/recover. */
export const RECOVER_RESPONSE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['queued'],
  properties: {queued: {type: 'integer', minimum: 0, description: 'How many failed deliveries were queued again.'}},
} as const

const SINCE_RULE = 'must be an RFC 3339 date-time such as 2026-11-24T09:00:00Z, at most 7 days ago and not in the future'
const validateRequest = compileOnFirstUse(bodyAjv, RECOVER_REQUEST_SCHEMA)

/** The `since` of a recover request body, in epoch milliseconds; a 400 naming `since` when the body has none. */
export function recoverSince(body: unknown): number {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError(`body must be a JSON object with "since", which ${SINCE_RULE}`, 'since')
  }
  if (!validateRequest(body)) throw toValidationError(validateRequest.errors?.[0], (param) => (param === 'since' ? SINCE_RULE : undefined), 'field')
  return firstMillisecondAtOrAfter((body as {since: string}).since)
}

/** Refuses a `since` in the future or more than RECOVER_WINDOW_MS before `now` (400 naming `since`). */
export function checkRecoverSince(since: number, now: number): void {
  if (since > now) throw new ValidationError(`since must not be in the future (it is ${isoTime(since)}, the time here is ${isoTime(now)})`, 'since')
  if (since < now - RECOVER_WINDOW_MS) {
    throw new ValidationError(
      `since must be at most 7 days ago: ${isoTime(now - RECOVER_WINDOW_MS)} or later`,
      'since',
      'for older ones: `leads deliveries redeliver --webhook WH_ID --failed --since T`',
    )
  }
}
