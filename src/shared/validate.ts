import {ValidationError} from './errors.js'

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export const SLUG_PATTERN = /^[a-z][a-z0-9_]{0,63}$/

/** Returns the UUID lower-cased, or throws a ValidationError naming the parameter. */
export function requireUuid(value: string, param: string): string {
  if (!UUID_PATTERN.test(value)) throw new ValidationError(`${param} must be a UUID, got "${value}"`, param)
  return value.toLowerCase()
}

export function requireSlug(value: string, param: string): string {
  if (!SLUG_PATTERN.test(value)) {
    throw new ValidationError(
      `${param} must start with a lower-case letter and hold only a-z, 0-9 and _ (at most 64), got "${value}"`,
      param,
    )
  }
  return value
}
