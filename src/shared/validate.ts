import {ValidationError} from './errors.js'
import {textProblem} from './text.js'

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const SLUG_PATTERN = /^[a-z][a-z0-9_]{0,63}$/
export const SLUG_MAX_LENGTH = 64
/** Display names of customers, stages, fields, owners and keys (their columns are VARCHAR(200)). */
export const NAME_MAX_LENGTH = 200

/** Where each kind of id is found, the hint of a malformed one. */
const UUID_HINTS: Record<string, string> = {
  customer: 'run `leads customers list`',
  key: 'run `leads keys list --customer …`; a key id is not its token',
  id: 'give a UUID, or leave --id out to get a new one',
}

/** Returns the UUID lower-cased, or throws a ValidationError naming the parameter. */
export function requireUuid(value: string, param: string): string {
  if (!UUID_PATTERN.test(value)) {
    throw new ValidationError(`${param} must be a UUID, got "${value}"`, param, UUID_HINTS[param] ?? 'ids are UUIDs, as the list commands show them')
  }
  return value.toLowerCase()
}

export function requireSlug(value: string, param: string): string {
  if (!SLUG_PATTERN.test(value)) {
    throw new ValidationError(`${param} must start with a lower-case letter and hold only a-z, 0-9 and _ (at most 64), got "${value}"`, param)
  }
  return value
}

/**
 * A display name trimmed and checked against its column: 1 to NAME_MAX_LENGTH characters of one
 * line of well-formed text. Undefined or blank gives `fallback` (undefined when there is none).
 */
export function requireName(value: string | undefined, param: string, fallback?: string): string
export function requireName(value: string | undefined, param: string, fallback: null): string | null
export function requireName(value: string | undefined, param: string, fallback?: string | null): string | null {
  const name = value?.trim() ?? ''
  if (name === '') {
    if (fallback !== undefined) return fallback
    throw new ValidationError(`${param} must not be empty`, param, `give a ${param} of 1 to ${NAME_MAX_LENGTH} characters`)
  }
  if (name.length > NAME_MAX_LENGTH) throw new ValidationError(`${param} must be at most ${NAME_MAX_LENGTH} characters, got ${name.length}`, param)
  const problem = textProblem(name, 'line')
  if (problem) throw new ValidationError(`${param} ${problem}`, param)
  return name
}
