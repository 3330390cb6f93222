import {bodyParser} from '@koa/bodyparser'
import type {Next} from 'koa'

import {isBulkRequest} from '../bulk-request.js'
import type {AppContext} from '../context.js'

export const SINGLE_BODY_LIMIT = '1mb'
export const BULK_BODY_LIMIT = '10mb'

const METHODS_WITH_BODY = ['POST', 'PUT', 'PATCH']

/**
 * Parses JSON bodies only: a body of another type is a 415, malformed JSON a 400 and one over
 * the limit (1 MiB, 10 MiB on bulk routes) a 413, all raised for the error envelope to render.
 */
export function jsonBody() {
  const options = {enableTypes: ['json'] as Array<'json'>, jsonStrict: true, encoding: 'utf-8'}
  const single = bodyParser({...options, jsonLimit: SINGLE_BODY_LIMIT})
  const bulk = bodyParser({...options, jsonLimit: BULK_BODY_LIMIT})
  return async function jsonBodyMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (!METHODS_WITH_BODY.includes(ctx.method)) return next()
    if (ctx.request.length > 0 || ctx.get('transfer-encoding') !== '') {
      if (!ctx.is('application/json')) throw Object.assign(new Error('unsupported media type'), {status: 415})
    }
    const parser = isBulkRequest(ctx) ? bulk : single
    await parser(ctx as never, next)
  }
}
