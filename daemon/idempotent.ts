import type {Knex} from 'knex'

import type {IdempotencyClaim} from '../src/idempotency/idempotency-service.js'
import type {Services} from '../src/services.js'
import {AppError} from '../src/shared/errors.js'
import type {AppContext} from './context.js'
import {appErrorEnvelope} from './middleware/errors.js'

/** Stores a response under the request's claim; the write calls it inside its own transaction. */
export type StoreResponse = (trx: Knex.Transaction, statusCode: number, body: string) => Promise<void>

/**
 * Runs a write route under its Idempotency-Key (when one is sent): replays a stored response
 * byte for byte with `Idempotent-Replayed: true`, or runs `perform` and keeps its response. A 4xx
 * is kept too; a 5xx or 429 releases the key so a retry runs again.
 */
export async function respondIdempotently(
  ctx: AppContext,
  services: Services,
  endpoint: string,
  perform: (storeResponse: StoreResponse) => Promise<{statusCode: number; body: string}>,
): Promise<void> {
  const key = ctx.get('idempotency-key')
  const customerId = ctx.state.customerId as string
  if (key === '') {
    send(ctx, await perform(async () => undefined))
    return
  }
  const decision = await services.idempotency.begin(customerId, endpoint, key, ctx.request.body)
  if (decision.kind === 'replay') {
    ctx.set('Idempotent-Replayed', 'true')
    send(ctx, {statusCode: decision.statusCode, body: decision.body})
    return
  }
  const claim: IdempotencyClaim = decision.claim
  let stored = false
  try {
    const response = await perform(async (trx, statusCode, body) => {
      await services.idempotency.complete(trx, claim, statusCode, body)
      stored = true
    })
    // A write that had no transaction to store in (a dry run) is stored on its own.
    if (!stored) await services.idempotency.complete(services.db, claim, response.statusCode, response.body)
    send(ctx, response)
  } catch (error) {
    if (error instanceof AppError && error.status < 500 && error.status !== 429) {
      await services.idempotency.complete(services.db, claim, error.status, JSON.stringify(appErrorEnvelope(error)))
    } else {
      await services.idempotency.release(claim).catch(() => undefined)
    }
    throw error
  }
}

function send(ctx: AppContext, response: {statusCode: number; body: string}): void {
  ctx.status = response.statusCode
  ctx.type = 'application/json'
  ctx.body = response.body
}
