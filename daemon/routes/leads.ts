import Router from '@koa/router'

import {bulkResponse, createResponse} from '../../src/leads/lead-view.js'
import type {BulkResult, CreateResult} from '../../src/leads/write-types.js'
import {parseListQuery} from '../../src/leads/list-query.js'
import type {Services} from '../../src/services.js'
import type {AppContext, AppState} from '../context.js'
import {respondIdempotently} from '../idempotent.js'
import {requireScope} from '../middleware/auth.js'
import {jsonBody} from '../middleware/json-body.js'
import {noQueryParameters} from '../middleware/no-query.js'

/** The public lead endpoints. */
export function leadRoutes(services: Services): Router<AppState> {
  const router = new Router<AppState>({strict: true, sensitive: true})
  const body = jsonBody()
  const bodyOnly = noQueryParameters('its settings go in the JSON body')

  router.get('/api/agents/crm/leads', requireScope('GET /api/agents/crm/leads'), async (ctx: AppContext) => {
    const query = parseListQuery(ctx.query, ctx.querystring)
    ctx.body = await services.leads.list(ctx.state.customerId as string, query)
  })

  router.post('/api/agents/crm/leads', requireScope('POST /api/agents/crm/leads'), bodyOnly, body, async (ctx: AppContext) => {
    await respondIdempotently<CreateResult>(
      ctx,
      services,
      'POST /api/agents/crm/leads',
      (hooks) => services.leadsWrite.create(ctx.state.customerId as string, ctx.request.body, hooks),
      (created) => ({statusCode: 201, body: JSON.stringify(createResponse(created))}),
    )
  })

  router.post('/api/agents/crm/leads/bulk', requireScope('POST /api/agents/crm/leads/bulk'), bodyOnly, body, async (ctx: AppContext) => {
    await respondIdempotently<BulkResult>(
      ctx,
      services,
      'POST /api/agents/crm/leads/bulk',
      (hooks) => services.leadsWrite.bulk(ctx.state.customerId as string, ctx.request.body, hooks),
      (written) => ({statusCode: 200, body: JSON.stringify(bulkResponse(written))}),
    )
  })

  return router
}
