import Router from '@koa/router'

import {bulkResponse, createResponse} from '../../src/leads/lead-view.js'
import {parseListQuery} from '../../src/leads/list-query.js'
import type {Services} from '../../src/services.js'
import type {AppContext, AppState} from '../context.js'
import {respondIdempotently} from '../idempotent.js'
import {requireScope} from '../middleware/auth.js'

/** The public lead endpoints. */
export function leadRoutes(services: Services): Router<AppState> {
  const router = new Router<AppState>({strict: true, sensitive: true})

  router.get('/api/agents/crm/leads', requireScope('GET /api/agents/crm/leads'), async (ctx: AppContext) => {
    const query = parseListQuery(ctx.query)
    ctx.body = await services.leads.list(ctx.state.customerId as string, query)
  })

  router.post('/api/agents/crm/leads', requireScope('POST /api/agents/crm/leads'), async (ctx: AppContext) => {
    await respondIdempotently(ctx, services, 'POST /api/agents/crm/leads', async (storeResponse) => {
      const result = await services.leadsWrite.create(ctx.state.customerId as string, ctx.request.body, (trx, created) =>
        storeResponse(trx, 201, JSON.stringify(createResponse(created))),
      )
      return {statusCode: 201, body: JSON.stringify(createResponse(result))}
    })
  })

  router.post('/api/agents/crm/leads/bulk', requireScope('POST /api/agents/crm/leads/bulk'), async (ctx: AppContext) => {
    await respondIdempotently(ctx, services, 'POST /api/agents/crm/leads/bulk', async (storeResponse) => {
      const result = await services.leadsWrite.bulk(ctx.state.customerId as string, ctx.request.body, (trx, written) =>
        storeResponse(trx, 200, JSON.stringify(bulkResponse(written))),
      )
      return {statusCode: 200, body: JSON.stringify(bulkResponse(result))}
    })
  })

  return router
}
