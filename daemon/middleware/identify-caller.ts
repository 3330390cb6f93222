import type {Next} from 'koa'

import type {KeyAuthenticator} from '../../src/keys/key-authenticator.js'
import type {Metrics} from '../../src/metrics/metrics.js'
import type {RateDecision, RequestLimiter} from '../../src/ratelimit/request-limiter.js'
import type {AppContext} from '../context.js'
import {BEARER} from './auth.js'
import {applyDecision, setRateLimitHeaders} from './rate-limit.js'

/**
 * Finds the key behind the bearer token, without rejecting anything yet (requireAuthentication
 * does), and guards the client address's keyless budget (100 requests a minute):
 *
 * - A token this daemon found valid moments ago (KeyAuthenticator.cachedKey) costs no lookup. Its
 *   request goes on unless the address is over its budget: a throttled address cannot tell a
 *   valid token from a guess.
 * - Any other request is counted against the address before its token is looked up, so a lookup
 *   is always paid for first, also when a burst of guesses arrives at once; a token that turns
 *   out valid is refunded and its request counted against its key instead.
 * - An internal key is exempt from the budget too. Over budget, a token is looked up only when
 *   it is one of an internal key's (told from the hashes KeyAuthenticator keeps), so guesses from
 *   a throttled address still cost no query.
 */
export function identifyCaller(authenticator: KeyAuthenticator, limiter: RequestLimiter, metrics: Metrics) {
  return async function identifyCallerMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const token = BEARER.exec(ctx.get('authorization'))?.[1]
    const known = token === undefined ? null : authenticator.cachedKey(token)
    if (known) {
      if (!known.internal) {
        const refusal = await limiter.anonymousRefusal(ctx.ip)
        if (refusal) applyDecision(ctx, refusal, metrics, 'anonymous')
      }
      ctx.state.key = known
      return next()
    }

    const decision = await limiter.consumeAnonymous(ctx.ip)
    if (token !== undefined && known === undefined) {
      const key = await refundingOnFailure(limiter, ctx, decision, async () =>
        decision.allowed || (await authenticator.isInternalToken(token)) ? authenticator.authenticate(token) : null,
      )
      if (key && (decision.allowed || key.internal)) {
        // A refund lost to a Redis fault costs the address one request of its budget, never this request.
        await limiter.refundAnonymous(ctx.ip).catch(() => undefined)
        ctx.state.key = key
        return next()
      }
    }
    // Without a valid key the request stays counted against the address: these are its headers.
    applyDecision(ctx, decision, metrics, 'anonymous')
    return next()
  }
}

/**
 * Runs a token lookup the address was charged for (`charged`). A lookup that failed (the database
 * unreachable) tells a valid token from a guess no better than none: the address gets its request
 * back, so the callers behind it do not find their budget spent by an outage once it is over. The
 * error's answer still carries the address's RateLimit headers, as every response does.
 */
async function refundingOnFailure<T>(limiter: RequestLimiter, ctx: AppContext, charged: RateDecision, lookup: () => Promise<T>): Promise<T> {
  try {
    return await lookup()
  } catch (error) {
    await limiter.refundAnonymous(ctx.ip).catch(() => undefined)
    // Over budget, the refund leaves the address at or over its limit: nothing remains either way.
    setRateLimitHeaders(ctx, {...charged, remaining: charged.allowed ? Math.min(charged.limit, charged.remaining + 1) : 0})
    throw error
  }
}
