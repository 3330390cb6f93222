import {randomUUID} from 'node:crypto'

import type {Next} from 'koa'

import type {Logger} from '../../src/log/logger.js'
import type {AppContext} from '../context.js'

const CLIENT_REQUEST_ID = /^[\w.:-]{1,128}$/

/**
 * Gives each request an id (the caller's X-Request-Id when it is sane) and a child logger, and
 * writes one access line when it ends. Headers and bodies are never logged: they carry tokens.
 * A request whose client went away before its answer (an upload cut off mid-body) is marked
 * `aborted`: its status is what the daemon would have answered, which nobody received.
 */
export function requestContext(logger: Logger) {
  return async function requestContextMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const started = process.hrtime.bigint()
    const given = ctx.get('x-request-id')
    ctx.state.requestId = CLIENT_REQUEST_ID.test(given) ? given : randomUUID()
    ctx.state.log = logger.child({request_id: ctx.state.requestId})
    ctx.set('X-Request-Id', ctx.state.requestId)
    try {
      await next()
    } finally {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6
      ctx.state.log.info(
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          duration_ms: Math.round(durationMs * 100) / 100,
          customer_id: ctx.state.customerId,
          key_id: ctx.state.key?.id,
          ...(ctx.req.socket.destroyed ? {aborted: true} : {}),
        },
        'request',
      )
    }
  }
}
