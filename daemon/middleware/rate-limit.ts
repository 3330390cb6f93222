import type {Next} from 'koa'

import type {Metrics} from '../../src/metrics/metrics.js'
import type {RateLimitService} from '../../src/ratelimit/ratelimit-service.js'
import type {Bucket, RateDecision, RequestLimiter} from '../../src/ratelimit/request-limiter.js'
import {RateLimitError} from '../../src/shared/errors.js'
import {isBulkRequest} from '../lead-write-requests.js'
import type {AppContext} from '../context.js'
import {statusOf} from './errors.js'

/**
 * Counts a keyed request against its key's bucket (bulk or default); internal keys are exempt.
 * A request without a valid key was counted against its client address by identifyCaller. The
 * RateLimit headers are set before anything else can fail, so every response carries them; a
 * refusal is a 429 with Retry-After. A request the service fails to answer (a 5xx: the database
 * gone, an unexpected error) is given back to its key: the API asks for a 5xx to be retried, and
 * the customer did nothing to spend its budget on.
 */
export function rateLimit(limiter: RequestLimiter, rateLimits: RateLimitService, metrics: Metrics) {
  return async function rateLimitMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const key = ctx.state.key
    if (!key) return next()
    const bucket: Bucket = isBulkRequest(ctx) ? 'bulk' : 'default'
    if (key.internal) {
      applyDecision(ctx, limiter.internalDecision(), metrics, bucket)
      return next()
    }
    const decision = await limiter.consumeKey(key.id, bucket, await rateLimits.limitsFor(key))
    applyDecision(ctx, decision, metrics, bucket)
    try {
      await next()
    } catch (error) {
      if (statusOf(error) >= 500) {
        // A refund lost to a Redis fault costs the key one request of its budget, never this answer.
        await limiter.refundKey(key.id, bucket).catch(() => undefined)
        setRateLimitHeaders(ctx, {...decision, remaining: Math.min(decision.limit, decision.remaining + 1)})
      }
      throw error
    }
  }
}

/** Sets the RateLimit headers; throws the 429 when the decision refuses. */
export function applyDecision(ctx: AppContext, decision: RateDecision, metrics: Metrics, bucket: Bucket | 'anonymous'): void {
  setRateLimitHeaders(ctx, decision)
  if (decision.allowed) return
  metrics.rateLimited.inc({bucket})
  ctx.set('Retry-After', String(decision.resetSeconds))
  throw new RateLimitError()
}

/** The RateLimit headers of a decision, which every response of the API carries. */
export function setRateLimitHeaders(ctx: AppContext, decision: RateDecision): void {
  ctx.set('RateLimit-Limit', String(decision.limit))
  ctx.set('RateLimit-Remaining', String(decision.remaining))
  ctx.set('RateLimit-Reset', String(decision.resetSeconds))
}
