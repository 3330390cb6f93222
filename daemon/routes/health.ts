import Router from '@koa/router'

import type {Services} from '../../src/services.js'
import type {AppContext, AppState} from '../context.js'

/** /healthz, /readyz and (with LEADS_METRICS=1) /metrics: no auth, no rate limit. */
export function healthRoutes(services: Services): Router<AppState> {
  const router = new Router<AppState>({strict: true, sensitive: true})
  router.get('/healthz', (ctx: AppContext) => {
    ctx.body = {status: 'ok'}
  })
  router.get('/readyz', async (ctx: AppContext) => {
    const {ready, checks, reasons} = await services.readiness()
    ctx.status = ready ? 200 : 503
    ctx.body = {status: ready ? 'ready' : 'unavailable', checks, reasons}
  })
  if (services.config.metricsEnabled) {
    router.get('/metrics', async (ctx: AppContext) => {
      ctx.type = services.metrics.registry.contentType
      ctx.body = await services.metrics.registry.metrics()
    })
  }
  return router
}
