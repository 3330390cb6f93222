import Router from '@koa/router'

import {parseListQuery} from '../../src/leads/list-query.js'
import type {Services} from '../../src/services.js'
import type {AppContext, AppState} from '../context.js'
import {requireScope} from '../middleware/auth.js'

/** The public lead endpoints. */
export function leadRoutes(services: Services): Router<AppState> {
  const router = new Router<AppState>()
  router.get('/api/agents/crm/leads', requireScope('GET /api/agents/crm/leads'), async (ctx: AppContext) => {
    const query = parseListQuery(ctx.query)
    ctx.body = await services.leads.list(ctx.state.customerId as string, query)
  })
  return router
}
