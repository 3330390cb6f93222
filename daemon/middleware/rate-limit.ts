import type {Next} from 'koa'

import type {Metrics} from '../../src/metrics/metrics.js'
import type {RateLimitService} from '../../src/ratelimit/ratelimit-service.js'
import type {Bucket, RateDecision, RequestLimiter} from '../../src/ratelimit/request-limiter.js'
import {RateLimitError} from '../../src/shared/errors.js'
import {isBulkRequest} from '../bulk-request.js'
import type {AppContext} from '../context.js'

/**
 * Refuses an address that has used up its keyless budget before its token is looked up: token
 * guessing costs the guesser its budget, not a database lookup each, and a throttled address
 * learns nothing about which tokens are valid.
 */
export function guardAddress(limiter: RequestLimiter, metrics: Metrics) {
  return async function guardAddressMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const refusal = await limiter.anonymousRefusal(ctx.ip)
    if (refusal) applyDecision(ctx, refusal, metrics, 'anonymous')
    await next()
  }
}

/**
 * Counts the request against its key's bucket (bulk or default), or against the client address
 * when it has no valid key; internal keys are exempt. The RateLimit headers are set before
 * anything else can fail, so every response carries them; a refusal is a 429 with Retry-After.
 */
export function rateLimit(limiter: RequestLimiter, rateLimits: RateLimitService, metrics: Metrics) {
  return async function rateLimitMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const key = ctx.state.key
    let decision: RateDecision
    const bucket: Bucket = isBulkRequest(ctx) ? 'bulk' : 'default'
    if (!key) decision = await limiter.consumeAnonymous(ctx.ip)
    else if (key.internal) decision = limiter.internalDecision()
    else decision = await limiter.consumeKey(key.id, bucket, await rateLimits.limitsFor(key))
    applyDecision(ctx, decision, metrics, key ? bucket : 'anonymous')
    await next()
  }
}

/** Sets the RateLimit headers; throws the 429 when the decision refuses. */
function applyDecision(ctx: AppContext, decision: RateDecision, metrics: Metrics, bucket: Bucket | 'anonymous'): void {
  ctx.set('RateLimit-Limit', String(decision.limit))
  ctx.set('RateLimit-Remaining', String(decision.remaining))
  ctx.set('RateLimit-Reset', String(decision.resetSeconds))
  if (decision.allowed) return
  metrics.rateLimited.inc({bucket})
  ctx.set('Retry-After', String(decision.resetSeconds))
  throw new RateLimitError()
}
