import type Router from '@koa/router'
import type {Next} from 'koa'

import type {AppContext, AppState} from '../context.js'

/**
 * Answers a request for a path the routers serve, with a method they do not serve on it, with
 * 405 and an `Allow` header listing the path's methods (HEAD wherever GET is). Every method Node
 * parses counts alike: TRACE, OPTIONS (the API is server-to-server, there is no CORS preflight to
 * answer), PROPFIND. A path no router serves falls through to the 404.
 */
export function allowedMethods(...routers: Array<Router<AppState>>) {
  return async function allowedMethodsMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const allowed = new Set(routers.flatMap((router) => router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods)))
    if (allowed.size === 0 || allowed.has(ctx.method)) return next()
    ctx.set('Allow', [...allowed].join(', '))
    throw Object.assign(new Error('method not allowed'), {status: 405})
  }
}
