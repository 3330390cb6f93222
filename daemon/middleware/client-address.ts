import type {Next} from 'koa'

import type {TrustedProxies} from '../../src/shared/trusted-proxies.js'
import type {AppContext} from '../context.js'

/**
 * Sets the request's client address (ctx.ip, which the per-address rate limit counts under): the
 * socket peer, or behind a trusted load balancer the hop its X-Forwarded-For names (see
 * TrustedProxies). Koa's own `proxy` setting would believe any peer's header.
 */
export function clientAddress(proxies: TrustedProxies) {
  return async function clientAddressMiddleware(ctx: AppContext, next: Next): Promise<void> {
    ctx.request.ip = proxies.clientAddress(ctx.req.socket.remoteAddress ?? '', ctx.req.headers['x-forwarded-for'])
    await next()
  }
}
