import os from 'node:os'

import type {Config} from './config/config.js'
import type {CustomersService} from './customers/customers-service.js'
import type {Db} from './db/knex.js'
import type {RedisConnection} from './db/redis.js'
import type {DeliveriesService} from './deliveries/deliveries-service.js'
import type {DispatchQueue} from './deliveries/dispatch-queue.js'
import type {InFlightSlots} from './deliveries/in-flight-slots.js'
import type {WebhookTestSend} from './deliveries/webhook-test-send.js'
import type {KeysService} from './keys/keys-service.js'
import type {LeadCountsStore} from './leads/lead-counts-store.js'
import type {LeadSearchIndex} from './leads/lead-search-index.js'
import type {Logger} from './log/logger.js'
import type {RateLimitService} from './ratelimit/ratelimit-service.js'
import type {RequestLimiter} from './ratelimit/request-limiter.js'
import type {Clock} from './shared/clock.js'
import {type GetPart, lazyParts, type PartBuilders} from './shared/parts.js'
import type {Stores} from './stores.js'
import type {SecretBox} from './webhooks/secret-box.js'
import type {LookupFn, TargetPolicy} from './webhooks/ssrf.js'
import type {WebhooksService} from './webhooks/webhooks-service.js'

/** The services the operator commands use; the daemon's Services has each of them too. */
export interface OperatorServices {
  readonly redis: RedisConnection | null
  readonly customers: CustomersService
  readonly keys: KeysService
  readonly rateLimits: RateLimitService
  /** The request counters (read by `leads ratelimit show`, consumed by the daemon). */
  readonly limiter: RequestLimiter
  readonly webhooks: WebhooksService
  /** Sends a signed sample event to a webhook now (`leads webhooks test`). */
  readonly webhookTest: WebhookTestSend
  readonly deliveries: DeliveriesService
  /** The deliveries on the wire per webhook, shared by every worker (Redis, or the database without it). */
  readonly inFlight: InFlightSlots
  /** The kept lead counts behind `total`; rebuilt by `leads maintenance recount`. */
  readonly leadCounts: LeadCountsStore
  /** The words of names and emails search looks up; rebuilt by `leads maintenance reindex`. */
  readonly searchIndex: LeadSearchIndex
  /** Makes the configured master key the one the database's secrets are sealed with (`leads maintenance adopt-master-key`). */
  readonly adoptMasterKey: () => Promise<void>
}

/** What the services are built from besides each other. */
export interface ServiceParts extends OperatorServices {
  readonly secrets: SecretBox
  readonly targets: TargetPolicy
  /** Where deliveries wait for a worker: a Redis stream (with a fallback), or this process's memory. */
  readonly queue: DispatchQueue
}

export interface PartsContext {
  readonly db: Db
  readonly config: Config
  readonly masterKey: Buffer
  readonly redis: RedisConnection | null
  readonly stores: GetPart<Stores>
  readonly clock: Clock
  readonly logger?: Logger
  /** DNS for webhook targets (tests give a resolver of their own). */
  readonly lookup?: LookupFn
  readonly limitsCacheTtlMs?: number
  readonly rateLimitKeyPrefix?: string
}

/**
 * How each service the operator commands use is built: the one place, used one by one by an
 * operator command (which then loads only the modules of what it asked for) and whole by
 * createServices. Each is built once per context.
 */
export function serviceParts(ctx: PartsContext): GetPart<ServiceParts> {
  const {clock, redis, stores} = ctx
  const builders: PartBuilders<ServiceParts> = {
    redis: async () => redis,
    customers: async () => new (await import('./customers/customers-service.js')).CustomersService(await stores('customers'), clock),
    keys: async (get) => new (await import('./keys/keys-service.js')).KeysService(await stores('keys'), await get('customers'), clock),
    rateLimits: async (get) =>
      new (await import('./ratelimit/ratelimit-service.js')).RateLimitService(
        await stores('rateLimits'),
        await get('customers'),
        await get('keys'),
        clock,
        ctx.limitsCacheTtlMs,
      ),
    limiter: async () => new (await import('./ratelimit/request-limiter.js')).RequestLimiter(redis, ctx.logger, ctx.rateLimitKeyPrefix),
    // Every use of the secrets (the daemon at start, a command that seals or opens one) checks the
    // master key first: one sealed under another key would never open in the daemons.
    secrets: async () => {
      await (await stores('masterKeyCheck')).verify(ctx.masterKey, clock.now())
      return new (await import('./webhooks/secret-box.js')).SecretBox(ctx.masterKey)
    },
    targets: async () => ({allowHosts: ctx.config.webhookAllowHosts, lookup: ctx.lookup ?? (await import('./webhooks/ssrf.js')).systemLookup}),
    queue: async () => {
      if (!redis) return new (await import('./deliveries/dispatch-queue.js')).MemoryQueue()
      const [{FallbackQueue}, {RedisStreamQueue}] = await Promise.all([import('./deliveries/fallback-queue.js'), import('./deliveries/redis-stream-queue.js')])
      const consumer = `${os.hostname()}:${process.pid}`
      return new FallbackQueue(new RedisStreamQueue(redis, consumer, 60_000, ctx.logger, () => clock.now()), ctx.logger)
    },
    inFlight: async () => {
      if (!redis) return stores('inFlight')
      const {FallbackInFlightSlots, RedisInFlightSlots} = await import('./deliveries/in-flight-slots.js')
      return new FallbackInFlightSlots(redis, new RedisInFlightSlots(redis), await stores('inFlight'))
    },
    webhooks: async (get) =>
      new (await import('./webhooks/webhooks-service.js')).WebhooksService(
        await stores('webhooks'),
        await stores('deliveries'),
        await stores('idempotency'),
        await get('secrets'),
        await get('targets'),
        clock,
      ),
    webhookTest: async (get) =>
      new (await import('./deliveries/webhook-test-send.js')).WebhookTestSend(await stores('webhooks'), await get('secrets'), await get('targets'), clock),
    deliveries: async (get) =>
      new (await import('./deliveries/deliveries-service.js')).DeliveriesService(
        await stores('deliveries'),
        await get('webhooks'),
        await get('queue'),
        await stores('events'),
        await get('inFlight'),
        new (await import('./leads/cursor.js')).CursorCodec(ctx.masterKey),
        clock,
      ),
    leadCounts: () => stores('leadCounts'),
    searchIndex: () => stores('searchIndex'),
    adoptMasterKey: async () => {
      const check = await stores('masterKeyCheck')
      return () => check.adopt(ctx.masterKey, clock.now())
    },
  }
  return lazyParts(builders)
}
