import Router from '@koa/router'

import {openApiDocument} from '../../src/openapi/openapi-document.js'
import type {AppContext, AppState} from '../context.js'

/** GET /openapi.json: no key needed, rate limited like the API. */
export function openApiRoutes(): Router<AppState> {
  const router = new Router<AppState>({strict: true, sensitive: true})
  const document = JSON.stringify(openApiDocument())
  router.get('/openapi.json', (ctx: AppContext) => {
    ctx.type = 'application/json'
    ctx.body = document
  })
  return router
}
