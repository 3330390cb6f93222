import type {Next} from 'koa'

import type {KeyAuthenticator} from '../../src/keys/key-authenticator.js'
import type {ApiKey} from '../../src/keys/key-types.js'
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
 * - A request whose token is being looked up for another request waits for that lookup and is
 *   then answered as if the token were cached: a valid key's burst, sent before the daemon knows
 *   the key, costs one charge and one lookup, not one per request (each would otherwise count
 *   against the address until its lookup ends, and a burst over the budget would lock out the
 *   address, every customer behind it included). The same guess sent many times at once is
 *   still counted once per request, after the one lookup.
 */
export function identifyCaller(authenticator: KeyAuthenticator, limiter: RequestLimiter, metrics: Metrics) {
  /** Per token being identified: what its identification found (undefined: it was not looked up, or the lookup failed). */
  const identifying = new Map<string, Promise<ApiKey | null | undefined>>()

  return async function identifyCallerMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const token = BEARER.exec(ctx.get('authorization'))?.[1]
    let known = token === undefined ? null : authenticator.cachedKey(token)
    if (known === undefined) known = await identifying.get(token as string)
    if (known === undefined && token !== undefined) {
      // Registered before the first await, so every request of a burst that arrives meanwhile finds it.
      let found: (key: ApiKey | null | undefined) => void = () => undefined
      const identification = new Promise<ApiKey | null | undefined>((resolve) => (found = resolve))
      identifying.set(token, identification)
      let identified: {key: ApiKey | null; charged: RateDecision}
      try {
        identified = await identify(ctx, token, found)
      } finally {
        // Forgotten once the lookup ends, not when the request does: from then on the token's cache
        // entry answers, and expires (a revocation must reach a long request's followers too).
        found(undefined)
        if (identifying.get(token) === identification) identifying.delete(token)
      }
      const {key, charged} = identified
      if (key && (charged.allowed || key.internal)) {
        // A refund lost to a Redis fault costs the address one request of its budget, never this request.
        await limiter.refundAnonymous(ctx.ip).catch(() => undefined)
        ctx.state.key = key
        return next()
      }
      // Without a valid key the request stays counted against the address: these are its headers.
      applyDecision(ctx, charged, metrics, 'anonymous')
      return next()
    }
    if (known) {
      if (!known.internal) {
        const refusal = await limiter.anonymousRefusal(ctx.ip)
        if (refusal) applyDecision(ctx, refusal, metrics, 'anonymous')
      }
      ctx.state.key = known
      return next()
    }

    // Without a valid key (none, or one known to be no key's) the request counts against the address.
    applyDecision(ctx, await limiter.consumeAnonymous(ctx.ip), metrics, 'anonymous')
    return next()
  }

  /**
   * Charges the address for a request whose token only a lookup can tell, then looks the token up
   * unless the address is over its budget (where only an internal key's token is); `found` hands
   * what the lookup found to the requests waiting for it.
   */
  async function identify(ctx: AppContext, token: string, found: (key: ApiKey | null) => void): Promise<{key: ApiKey | null; charged: RateDecision}> {
    const charged = await limiter.consumeAnonymous(ctx.ip)
    if (!charged.allowed && !(await authenticator.isInternalToken(token))) return {key: null, charged}
    const key = await refundingOnFailure(limiter, ctx, charged, () => authenticator.authenticate(token))
    found(key)
    return {key, charged}
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
