import {Ajv, type ErrorObject} from 'ajv'
import addFormatsModule from 'ajv-formats'

import {ValidationError} from './errors.js'

// ajv-formats is CommonJS; under NodeNext its default export arrives as the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/**
 * ajv-formats' date-time accepts a leap second (23:59:60), which Date.parse cannot represent: the
 * value would become NaN further on. Only instants JavaScript can hold are valid here.
 */
function withRepresentableDateTimes(ajv: Ajv): Ajv {
  const rfc3339 = ajv.formats['date-time'] as {validate: (value: string) => boolean}
  return ajv.addFormat('date-time', (value: string) => rfc3339.validate(value) && Number.isFinite(Date.parse(value)))
}

/** Ajv for query strings: "20" becomes 20 and "true" becomes true before the schema applies. */
export const queryAjv = withRepresentableDateTimes(addFormats(new Ajv({allErrors: false, coerceTypes: true, useDefaults: true, allowUnionTypes: true})))

/** Ajv for JSON bodies: types are taken as sent. */
export const bodyAjv = withRepresentableDateTimes(addFormats(new Ajv({allErrors: false, useDefaults: true, allowUnionTypes: true})))

/** The field an ajv error is about: the unknown property's name, or the path's first segment. */
export function errorParam(error: ErrorObject): string | undefined {
  if (error.keyword === 'additionalProperties') return String(error.params['additionalProperty'])
  if (error.keyword === 'required') return String(error.params['missingProperty'])
  const segment = error.instancePath.split('/')[1]
  return segment === undefined || segment === '' ? undefined : segment.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** Turns the first ajv error into a ValidationError, using a per-field description when one is known. */
export function toValidationError(
  error: ErrorObject | undefined,
  describe: (param: string) => string | undefined,
  noun: string,
): ValidationError {
  if (!error) return new ValidationError(`invalid ${noun}`)
  const param = errorParam(error)
  if (error.keyword === 'additionalProperties') {
    return new ValidationError(`unknown ${noun} "${param}"`, param)
  }
  if (param === undefined) return new ValidationError(`invalid ${noun}: ${error.message ?? 'bad value'}`)
  const rule = describe(param) ?? error.message ?? 'has a bad value'
  return new ValidationError(`${noun} "${param}" ${rule}`, param)
}
