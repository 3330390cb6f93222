import Koa from 'koa'

import type {Logger} from '../src/log/logger.js'
import type {Services} from '../src/services.js'
import type {AppState} from './context.js'
import {TrustedProxies} from '../src/shared/trusted-proxies.js'
import {clientAddress} from './middleware/client-address.js'
import {allowedMethods} from './middleware/allowed-methods.js'
import {requireAuthentication} from './middleware/auth.js'
import {errorEnvelope} from './middleware/errors.js'
import {recordMetrics} from './middleware/metrics.js'
import {rateLimit} from './middleware/rate-limit.js'
import {identifyCaller} from './middleware/identify-caller.js'
import {requestContext} from './middleware/request-context.js'
import {healthRoutes} from './routes/health.js'
import {leadRoutes} from './routes/leads.js'
import {openApiRoutes} from './routes/openapi.js'
import {webhookRoutes} from './routes/webhooks.js'

/**
 * The public API as a Koa app, in the order a request travels: the client's address, context
 * and error envelope, health probes, caller identification (which guards the address's keyless
 * budget), the key's rate limit, the API document, a wrong method on a public path,
 * authentication, a wrong method on an API path, then the routes, which check the key's scope
 * before they parse a body (a key without the scope gets its 403 whatever it sent). API paths
 * are checked after authentication, so that an anonymous caller learns nothing about them;
 * public paths before it, as they need no credentials.
 */
export function createApp(services: Services, logger: Logger): Koa<AppState> {
  const app = new Koa<AppState>({proxy: false})
  // Errors are rendered and logged by errorEnvelope; Koa's default handler would print stacks.
  app.silent = true

  const health = healthRoutes(services)
  const api = leadRoutes(services)
  api.use(webhookRoutes(services).routes())

  app.use(clientAddress(new TrustedProxies(services.config.trustedProxies)))
  app.use(requestContext(logger))
  app.use(recordMetrics(services.metrics))
  app.use(errorEnvelope)
  app.use(health.routes())
  app.use(identifyCaller(services.keyAuthenticator, services.limiter, services.metrics))
  app.use(rateLimit(services.limiter, services.rateLimits, services.metrics))
  // The API document is public, but counted like any request (per key, or per address without one).
  const openApi = openApiRoutes()
  app.use(openApi.routes())
  app.use(allowedMethods(health, openApi))
  app.use(requireAuthentication)
  app.use(allowedMethods(api))
  app.use(api.routes())
  return app
}
