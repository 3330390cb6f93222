import {createRequire} from 'node:module'

import type {RateLimiterAbstract, RateLimiterRes} from 'rate-limiter-flexible'

import type {RedisConnection} from '../db/redis.js'
import type {Logger} from '../log/logger.js'
import {ANONYMOUS_PER_MINUTE, DEFAULT_LIMITS, type Limits} from './limits.js'

type Window = 'minute' | 'hour' | 'bulk' | 'anonymous'

const WINDOW_SECONDS: Record<Window, number> = {minute: 60, hour: 3600, bulk: 60, anonymous: 60}

/**
 * The library's own refusal is never used: each key's limit can differ (overrides), so the
 * counters are kept with a ceiling no one reaches and compared with the key's limit here.
 */
const COUNTER_CEILING = 1_000_000_000
const REDIS_WARNING_INTERVAL_MS = 30_000
/** How long a counter waits for Redis before the request is counted in this daemon's memory (the enqueue waits as long). */
const REDIS_ANSWER_TIMEOUT_MS = 250
/**
 * How long an address seen under its keyless budget is not asked about again (with Redis). Each
 * request of a valid key would otherwise cost a Redis round trip before anything else. The daemon
 * that counts a keyless request forgets the address at once; one whose budget another daemon
 * spent is refused here within this time.
 */
const UNDER_BUDGET_MEMORY_MS = 1000
const UNDER_BUDGET_ADDRESSES = 10_000

export type Bucket = 'default' | 'bulk'

/** What the RateLimit headers report, and whether the request may go on. */
export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the reported window resets; Retry-After on a refusal. */
  resetSeconds: number
}

export interface Usage {
  minute: number
  hour: number
  bulk: number
}

/**
 * Fixed-window request counters from rate-limiter-flexible, in Redis when configured (shared by
 * every daemon) or in memory. While Redis is unreachable each daemon counts in its own memory
 * (the library's insurance limiter) and a warning is logged: the API keeps serving, with the
 * budget enforced per instance instead of shared.
 */
export class RequestLimiter {
  private readonly counters: Record<Window, RateLimiterAbstract>
  /**
   * With Redis, this daemon's own count of each address's keyless requests besides the shared one.
   * A Redis answer later than REDIS_ANSWER_TIMEOUT_MS (Redis slow, or this daemon's event loop
   * busy with a burst) is replaced by a count in memory of only the late requests; this one counts
   * them all, so a daemon never lets an address past its budget, whatever Redis does.
   */
  private readonly ownAnonymous: RateLimiterAbstract | null
  private lastRedisWarning = 0
  /** Addresses last seen under their keyless budget, until when (see UNDER_BUDGET_MEMORY_MS). */
  private readonly underBudget = new Map<string, number>()
  /** The number of this daemon's last keyless count per address (see anonymousRefusal). */
  private readonly charged = new Map<string, number>()
  private charges = 0

  constructor(
    private readonly redis: RedisConnection | null,
    private readonly logger?: Logger,
    /** Redis key prefix; daemons that share a budget must share it. */
    keyPrefix = 'leads:rl',
  ) {
    // Required, not imported: only the daemon and `leads ratelimit show` build a limiter (service-parts.ts).
    const {RateLimiterMemory, RateLimiterRedis, RLWrapperTimeouts} = createRequire(import.meta.url)(
      'rate-limiter-flexible',
    ) as typeof import('rate-limiter-flexible')
    const build = (window: Window): RateLimiterAbstract => {
      const options = {keyPrefix: `${keyPrefix}:${window}`, points: COUNTER_CEILING, duration: WINDOW_SECONDS[window]}
      if (!redis) return new RateLimiterMemory(options)
      const insuranceLimiter = new RateLimiterMemory(options)
      const shared = new RateLimiterRedis({...options, storeClient: redis.limiterStore, useRedisPackage: true, rejectIfRedisNotReady: true, insuranceLimiter})
      // Redis can hold a command instead of refusing it: during a Sentinel failover node-redis
      // queues it until the new master is known (test/topology/redis-sentinel.test.ts fails one over), and
      // a hung server never answers. Past the timeout the request is counted in memory instead.
      return new RLWrapperTimeouts({limiter: shared, timeoutMs: REDIS_ANSWER_TIMEOUT_MS, insuranceLimiter})
    }
    this.counters = {minute: build('minute'), hour: build('hour'), bulk: build('bulk'), anonymous: build('anonymous')}
    this.ownAnonymous = redis ? new RateLimiterMemory({keyPrefix: 'own', points: COUNTER_CEILING, duration: WINDOW_SECONDS.anonymous}) : null
  }

  /**
   * Counts a request of an API key. The default bucket has a minute and an hour window, counted
   * at once (with Redis, one round trip instead of two); a request one window refuses is taken
   * back from the other, so a refusal by one window never spends the other's quota. When both
   * windows are spent, the one that opens last is reported: a client that waits for the minute
   * alone would be refused again by the hour.
   */
  async consumeKey(keyId: string, bucket: Bucket, limits: Limits): Promise<RateDecision> {
    this.warnIfRedisDown()
    if (bucket === 'bulk') return decide(await this.counters.bulk.consume(keyId), limits.bulkPerMinute)

    const [minuteCount, hourCount] = await Promise.all([this.counters.minute.consume(keyId), this.counters.hour.consume(keyId)])
    const minute = decide(minuteCount, limits.perMinute)
    if (!minute.allowed) {
      // Reported as the hour stood before this request, which it does not spend.
      await this.counters.hour.reward(keyId, 1)
      const hour = decide({consumedPoints: hourCount.consumedPoints - 1, msBeforeNext: hourCount.msBeforeNext}, limits.perHour)
      return hour.remaining === 0 && hour.resetSeconds > minute.resetSeconds ? {...hour, allowed: false} : minute
    }
    const hour = decide(hourCount, limits.perHour)
    if (!hour.allowed) {
      await this.counters.minute.reward(keyId, 1)
      return hour
    }
    if (hour.remaining !== minute.remaining) return hour.remaining < minute.remaining ? hour : minute
    return hour.remaining === 0 && hour.resetSeconds > minute.resetSeconds ? hour : minute
  }

  /** Gives back a request consumeKey allowed: the service failed to answer it. */
  async refundKey(keyId: string, bucket: Bucket): Promise<void> {
    if (bucket === 'bulk') await this.counters.bulk.reward(keyId, 1)
    else await Promise.all([this.counters.minute.reward(keyId, 1), this.counters.hour.reward(keyId, 1)])
  }

  /**
   * Counts a request against its client address's keyless budget. The address guard counts every
   * request it cannot yet tie to a valid key, before its token is looked up, and refunds the
   * ones whose token turns out valid (refundAnonymous).
   */
  async consumeAnonymous(address: string): Promise<RateDecision> {
    this.warnIfRedisDown()
    if (this.charged.size >= UNDER_BUDGET_ADDRESSES) this.charged.clear()
    this.charged.set(address, ++this.charges)
    this.underBudget.delete(address)
    const [shared, own] = await Promise.all([this.counters.anonymous.consume(address), this.ownAnonymous?.consume(address)])
    const decision = decide(shared, ANONYMOUS_PER_MINUTE)
    if (!own) return decision
    const ownDecision = decide(own, ANONYMOUS_PER_MINUTE)
    if (!decision.allowed) return decision
    return !ownDecision.allowed || ownDecision.remaining < decision.remaining ? ownDecision : decision
  }

  /** Takes back a request counted by consumeAnonymous: its token was valid, so it counts against its key instead. */
  async refundAnonymous(address: string): Promise<void> {
    await Promise.all([this.counters.anonymous.reward(address, 1), this.ownAnonymous?.reward(address, 1)])
  }

  /**
   * The refusal an address has earned without spending more budget: non-null once its keyless
   * requests (including every failed token guess) used up the minute. The guard asks it for a
   * request whose token it already knows to be valid, so a throttled address cannot tell a valid
   * token from a guess.
   */
  async anonymousRefusal(address: string): Promise<RateDecision | null> {
    this.warnIfRedisDown()
    const own = await this.ownAnonymous?.get(address)
    if (own && own.consumedPoints >= ANONYMOUS_PER_MINUTE) return {...decide(own, ANONYMOUS_PER_MINUTE), allowed: false}
    if ((this.underBudget.get(address) ?? 0) > Date.now()) return null
    const chargedBefore = this.charged.get(address)
    const used = await this.counters.anonymous.get(address)
    if (!used || used.consumedPoints < ANONYMOUS_PER_MINUTE) {
      // An answer read while this daemon counted a request of the address may predate that
      // count: only an answer no count overtook is remembered.
      if (this.redis && this.charged.get(address) === chargedBefore) this.rememberUnderBudget(address)
      return null
    }
    return {...decide(used, ANONYMOUS_PER_MINUTE), allowed: false}
  }

  private rememberUnderBudget(address: string): void {
    if (this.underBudget.size >= UNDER_BUDGET_ADDRESSES) this.underBudget.clear()
    this.underBudget.set(address, Date.now() + UNDER_BUDGET_MEMORY_MS)
  }

  /** What an internal (exempt) key is told: the default bucket's limit, all of it remaining. */
  internalDecision(): RateDecision {
    return {allowed: true, limit: DEFAULT_LIMITS.perMinute, remaining: DEFAULT_LIMITS.perMinute, resetSeconds: 0}
  }

  /** Requests counted for a key in its current windows. */
  async usage(keyId: string): Promise<Usage> {
    const consumed = async (window: Window) => (await this.counters[window].get(keyId))?.consumedPoints ?? 0
    return {minute: await consumed('minute'), hour: await consumed('hour'), bulk: await consumed('bulk')}
  }

  private warnIfRedisDown(): void {
    if (!this.redis || this.redis.isReady) return
    const now = Date.now()
    if (now - this.lastRedisWarning < REDIS_WARNING_INTERVAL_MS) return
    this.lastRedisWarning = now
    this.logger?.warn('redis unreachable: rate limits are counted per daemon until it returns')
  }
}

function decide(result: Pick<RateLimiterRes, 'consumedPoints' | 'msBeforeNext'>, limit: number): RateDecision {
  const resetSeconds = Math.max(1, Math.ceil(result.msBeforeNext / 1000))
  return {
    allowed: result.consumedPoints <= limit,
    limit,
    remaining: Math.max(0, limit - result.consumedPoints),
    resetSeconds,
  }
}
