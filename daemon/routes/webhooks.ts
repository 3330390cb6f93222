import Router from '@koa/router'

import {recoverSince} from '../../src/deliveries/recover.js'
import type {Services} from '../../src/services.js'
import {isWebhookId} from '../../src/webhooks/webhook-types.js'
import {toApiWebhook, webhookNotFound, type WebhookWithSecret} from '../../src/webhooks/webhooks-service.js'
import type {AppContext, AppState} from '../context.js'
import {respondIdempotently} from '../idempotent.js'
import {requireScope} from '../middleware/auth.js'
import {jsonBody} from '../middleware/json-body.js'
import {noQueryParameters} from '../middleware/no-query.js'

const BASE = '/api/agents/crm/lead-webhooks'

/** The webhook management endpoints; every one is scoped to the key's customer. */
export function webhookRoutes(services: Services): Router<AppState> {
  const router = new Router<AppState>({strict: true, sensitive: true})
  const customerOf = (ctx: AppContext) => ctx.state.customerId as string
  const body = jsonBody()
  const bodyOnly = noQueryParameters('its settings go in the JSON body')
  const none = noQueryParameters()
  // Answers that hold a signing secret (a registration's, a rotation's) are kept sealed.
  const sealedAnswers = {seal: (body: string) => services.webhooks.sealAnswer(body), open: (stored: string) => services.webhooks.openAnswer(stored)}

  router.post(BASE, requireScope('POST /api/agents/crm/lead-webhooks'), bodyOnly, body, async (ctx: AppContext) => {
    await respondIdempotently<WebhookWithSecret>(
      ctx,
      services,
      'POST /api/agents/crm/lead-webhooks',
      (hooks) => services.webhooks.create(customerOf(ctx), ctx.request.body, hooks),
      ({webhook, secret}) => ({statusCode: 201, body: JSON.stringify({webhook: toApiWebhook(webhook), secret})}),
      sealedAnswers,
    )
  })

  router.get(BASE, requireScope('GET /api/agents/crm/lead-webhooks'), none, async (ctx: AppContext) => {
    ctx.body = {webhooks: (await services.webhooks.list(customerOf(ctx))).map(toApiWebhook)}
  })

  router.patch(`${BASE}/:id`, requireScope('PATCH /api/agents/crm/lead-webhooks/:id'), bodyOnly, body, async (ctx: AppContext) => {
    const id = String(ctx.params['id'])
    // A path that no webhook id can take names no webhook; it would not fit the key's endpoint column either.
    if (!isWebhookId(id)) throw webhookNotFound(id)
    // The key is scoped to the webhook: the same key sent for another webhook is another request.
    await respondIdempotently<WebhookWithSecret>(
      ctx,
      services,
      `PATCH ${BASE}/${id}`,
      (hooks) => services.webhooks.update(customerOf(ctx), id, ctx.request.body, hooks),
      ({webhook, secret}) => ({
        statusCode: 200,
        body: JSON.stringify(secret === undefined ? {webhook: toApiWebhook(webhook)} : {webhook: toApiWebhook(webhook), secret}),
      }),
      sealedAnswers,
    )
  })

  router.delete(`${BASE}/:id`, requireScope('DELETE /api/agents/crm/lead-webhooks/:id'), none, async (ctx: AppContext) => {
    const id = String(ctx.params['id'])
    await services.webhooks.delete(customerOf(ctx), id)
    ctx.body = {id, deleted: true}
  })

  router.post(`${BASE}/:id/recover`, requireScope('POST /api/agents/crm/lead-webhooks/:id/recover'), bodyOnly, body, async (ctx: AppContext) => {
    const queued = await services.deliveries.recover(customerOf(ctx), String(ctx.params['id']), recoverSince(ctx.request.body))
    ctx.status = 202
    ctx.body = {queued}
  })

  return router
}
