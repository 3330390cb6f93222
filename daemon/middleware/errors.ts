import type {Next} from 'koa'

import {DatabaseConflict, DatabaseUnavailable, isConflictRefusal, isDatabaseUnavailable} from '../../src/db/errors.js'
import {AppError, type ErrorType, InProgressError, UnavailableError, ValidationError} from '../../src/shared/errors.js'
import {withoutSecrets} from '../../src/shared/secret-text.js'
import type {AppContext} from '../context.js'

interface Envelope {
  error: {type: ErrorType; code: number; message: string; param?: string}
}

/** Messages for errors raised by Koa and its parsers rather than by our code. */
const FRAMEWORK_ERRORS: Record<number, {type: ErrorType; message: string}> = {
  400: {type: 'invalid_request_error', message: 'Request body is not valid JSON.'},
  404: {type: 'not_found_error', message: 'No such endpoint. See the API reference for the available paths.'},
  405: {type: 'invalid_request_error', message: 'Method not allowed on this path; the Allow header lists the methods it serves.'},
  413: {type: 'invalid_request_error', message: 'Request body is too large.'},
  415: {type: 'invalid_request_error', message: 'Content-Type must be application/json.'},
}

/**
 * The one place that writes an error response: every failure below becomes the envelope
 * `{error: {type, code, message}}`. Unexpected errors are logged in full and answered with a
 * generic 500 that holds no stack or SQL. A database that cannot serve (unreachable, a lost
 * connection, a Galera node without quorum) or that refused the request for a conflict with
 * concurrent ones is a 503 with Retry-After.
 */
export async function errorEnvelope(ctx: AppContext, next: Next): Promise<void> {
  try {
    await next()
    // No route matched: a 404 without a body.
    if (ctx.body === undefined && ctx.status >= 400) throw Object.assign(new Error('no route'), {status: ctx.status})
  } catch (thrown) {
    // A database that cannot serve now, or refused the request for a conflict with others, is the
    // client's cue to retry, never an unexpected failure.
    const error = thrown instanceof AppError ? thrown : retryable(thrown, ctx)
    if (error instanceof UnavailableError || error instanceof InProgressError) ctx.set('Retry-After', String(error.retryAfterSeconds))
    const envelope = toEnvelope(error, ctx)
    ctx.status = envelope.error.code
    ctx.body = envelope
  }
}

/** The status errorEnvelope answers an error with: a 5xx when the service failed, not the request. */
export function statusOf(error: unknown): number {
  if (error instanceof AppError) return error.status
  if (isDatabaseUnavailable(error) || isConflictRefusal(error)) return 503
  const status = (error as {status?: number}).status
  return status !== undefined && FRAMEWORK_ERRORS[status] ? status : 500
}

/** The 503 a database failure the client can retry is answered with, logged as a warning; any other error as it is. */
function retryable(error: unknown, ctx: AppContext): unknown {
  if (isDatabaseUnavailable(error)) {
    ctx.state.log.warn({err: error}, 'database unavailable')
    return new DatabaseUnavailable()
  }
  if (isConflictRefusal(error)) {
    ctx.state.log.warn({err: error}, 'database conflict')
    return new DatabaseConflict()
  }
  return error
}

/** The envelope of an error the core threw on purpose. */
export function appErrorEnvelope(error: AppError): Envelope {
  const param = error instanceof ValidationError ? error.param : undefined
  // A message may quote a value the caller sent: a token sent where an id goes is not sent back.
  return {error: {type: error.type, code: error.status, message: withoutSecrets(error.message), ...(param ? {param} : {})}}
}

function toEnvelope(error: unknown, ctx: AppContext): Envelope {
  if (error instanceof AppError) return appErrorEnvelope(error)
  const status = (error as {status?: number}).status
  const known = status === undefined ? undefined : FRAMEWORK_ERRORS[status]
  if (known && status !== undefined) return {error: {type: known.type, code: status, message: known.message}}
  ctx.state.log.error({err: error}, 'unhandled error')
  return {error: {type: 'api_error', code: 500, message: 'Internal server error. Retry later; if it persists, contact the operator with the X-Request-Id.'}}
}
