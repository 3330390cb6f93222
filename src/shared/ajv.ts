import {createRequire} from 'node:module'

import type {Ajv, ErrorObject} from 'ajv'
import type addFormatsModule from 'ajv-formats'

import {ValidationError} from './errors.js'

// ajv and ajv-formats are CommonJS, required on the first validation (see compileOnFirstUse): most
// commands never validate a body, and loading them would slow every start-up.
const require = createRequire(import.meta.url)

/**
 * ajv-formats' date-time accepts a leap second (23:59:60), which Date.parse cannot represent: the
 * value would become NaN further on. Only instants JavaScript can hold are valid here.
 */
function withRepresentableDateTimes(ajv: Ajv): Ajv {
  const rfc3339 = ajv.formats['date-time'] as {validate: (value: string) => boolean}
  return ajv.addFormat('date-time', (value: string) => rfc3339.validate(value) && Number.isFinite(Date.parse(value)))
}

function newAjv(options: {coerceTypes: boolean}): Ajv {
  const {Ajv: AjvClass} = require('ajv') as typeof import('ajv')
  const addFormats = require('ajv-formats') as typeof addFormatsModule.default
  return withRepresentableDateTimes(addFormats(new AjvClass({allErrors: false, useDefaults: true, allowUnionTypes: true, ...options})))
}

let queryInstance: Ajv | undefined
let bodyInstance: Ajv | undefined

/** Ajv for query strings: "20" becomes 20 and "true" becomes true before the schema applies. */
export const queryAjv = (): Ajv => (queryInstance ??= newAjv({coerceTypes: true}))

/** Ajv for JSON bodies: types are taken as sent. */
export const bodyAjv = (): Ajv => (bodyInstance ??= newAjv({coerceTypes: false}))

/** The field an ajv error is about: the unknown property's name, or the path's first segment. */
function errorParam(error: ErrorObject): string | undefined {
  if (error.keyword === 'additionalProperties') return String(error.params['additionalProperty'])
  if (error.keyword === 'required') return String(error.params['missingProperty'])
  const segment = error.instancePath.split('/')[1]
  return segment === undefined || segment === '' ? undefined : segment.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** Turns the first ajv error into a ValidationError, using a per-field description when one is known. */
export function toValidationError(error: ErrorObject | undefined, describe: (param: string) => string | undefined, noun: string): ValidationError {
  if (!error) return new ValidationError(`invalid ${noun}`)
  const param = errorParam(error)
  if (error.keyword === 'additionalProperties') {
    return new ValidationError(`unknown ${noun} "${param}"`, param)
  }
  if (param === undefined) return new ValidationError(`invalid ${noun}: ${error.message ?? 'bad value'}`)
  const rule = describe(param) ?? error.message ?? 'has a bad value'
  return new ValidationError(`${noun} "${param}" ${rule}`, param)
}

/** A validator as the code calls it: true or false, and the errors of the last call. */
export interface Validator {
  (data: unknown): boolean
  readonly errors: ErrorObject[] | null | undefined
}

/**
 * A validator compiled on its first call. Compiling the schemas when their modules load would
 * slow the start-up of every command, also the many that never validate a body.
 */
export function compileOnFirstUse(ajv: () => Ajv, schema: object): Validator {
  let compiled: ReturnType<Ajv['compile']> | undefined
  const validate = (data: unknown) => (compiled ??= ajv().compile(schema))(data)
  return Object.defineProperty(validate, 'errors', {get: () => compiled?.errors}) as Validator
}
