import os from 'node:os'

import type {Config} from './config/config.js'
import {resolveMasterKey} from './config/master-key.js'
import {CustomersService} from './customers/customers-service.js'
import {createDb, type Db, pingDatabase, probeDatabase, readPacketLimit} from './db/knex.js'
import {databaseFailureReason} from './db/errors.js'
import {galeraMembership, type GaleraMembership} from './db/galera.js'
import {requireWritableServer} from './db/writable.js'
import {isGaleraNode, WriterNodes} from './db/writer-nodes.js'
import {migrateLatest, migrationStatus} from './db/migrate.js'
import {unreachableDatabaseError} from './db/database-errors.js'
import {connectRedis, type RedisConnection} from './db/redis.js'
import {DeliveriesService} from './deliveries/deliveries-service.js'
import {DeliveryWorker, type WorkerOptions} from './deliveries/delivery-worker.js'
import {type DispatchQueue, MemoryQueue} from './deliveries/dispatch-queue.js'
import {FallbackQueue} from './deliveries/fallback-queue.js'
import {FallbackInFlightSlots, type InFlightSlots, RedisInFlightSlots} from './deliveries/in-flight-slots.js'
import {DeliveryOutbox} from './deliveries/outbox.js'
import {RedisStreamQueue} from './deliveries/redis-stream-queue.js'
import {DeliverySender} from './deliveries/sender.js'
import {WebhookTestSend} from './deliveries/webhook-test-send.js'
import {IdempotencyService} from './idempotency/idempotency-service.js'
import {KeyAuthenticator} from './keys/key-authenticator.js'
import {KeysService} from './keys/keys-service.js'
import {CursorCodec} from './leads/cursor.js'
import type {LeadCountsStore} from './leads/lead-counts-store.js'
import type {LeadSearchIndex} from './leads/lead-search-store.js'
import {LeadsService} from './leads/leads-service.js'
import {LeadsWriteService} from './leads/leads-write-service.js'
import {createLogger, type Logger} from './log/logger.js'
import {Metrics} from './metrics/metrics.js'
import {RateLimitService} from './ratelimit/ratelimit-service.js'
import {RequestLimiter} from './ratelimit/request-limiter.js'
import {type Clock, systemClock} from './shared/clock.js'
import {ConfigError} from './shared/errors.js'
import {createStores} from './stores.js'
import {SecretBox} from './webhooks/secret-box.js'
import {type LookupFn, systemLookup, type TargetPolicy} from './webhooks/ssrf.js'
import {WebhooksService} from './webhooks/webhooks-service.js'

export interface Services {
  readonly config: Config
  readonly redis: RedisConnection | null
  readonly customers: CustomersService
  readonly keys: KeysService
  readonly keyAuthenticator: KeyAuthenticator
  readonly leads: LeadsService
  readonly leadsWrite: LeadsWriteService
  /** The kept lead counts behind `total`; rebuilt by `leads maintenance recount`. */
  readonly leadCounts: LeadCountsStore
  /** The words of names and emails search looks up; rebuilt by `leads maintenance reindex`. */
  readonly searchIndex: LeadSearchIndex
  readonly idempotency: IdempotencyService
  readonly rateLimits: RateLimitService
  readonly limiter: RequestLimiter
  readonly metrics: Metrics
  readonly webhooks: WebhooksService
  /** Sends a signed sample event to a webhook now (`leads webhooks test`). */
  readonly webhookTest: WebhookTestSend
  readonly deliveries: DeliveriesService
  /** The deliveries on the wire per webhook, shared by every worker (Redis, or the database without it). */
  readonly inFlight: InFlightSlots
  /** A delivery worker on this process's queue; the daemon starts one unless its role is api. */
  createWorker(options?: WorkerOptions): DeliveryWorker
  /** Which backing stores answer right now (null: not configured). */
  readiness(): Promise<Readiness>
  /** The Galera cluster the database is a node of, or null for a server alone or SQLite. */
  galera(): Promise<GaleraMembership | null>
  /** On a Galera node, the records of the node `daemon` writes through (daemon/writer-watch.ts); null elsewhere. */
  galeraWriters(daemon: string, role: string): Promise<WriterNodes | null>
  close(): Promise<void>
}

export interface ServiceOptions {
  /**
   * An open handle on config.database to build on, instead of opening one; its opener keeps it
   * and closes it after close(). Tests and benchmarks pass their own, to reach rows no service
   * returns; the daemon and the commands never do.
   */
  db?: Db
  clock?: Clock
  logger?: Logger
  /** Migrate on start; default: on the embedded SQLite store only. */
  autoMigrate?: boolean
  /** Refuse to start with pending migrations (the daemon on MySQL); default false. */
  requireCurrentSchema?: boolean
  /** Refuse a read-only server or a replica (the daemon on MySQL); default false. */
  requireWritable?: boolean
  keyCacheTtlMs?: number
  /** How long a key's rate limits are reused before overrides are read again. */
  limitsCacheTtlMs?: number
  /** Redis key prefix of the rate-limit counters (tests isolate daemons with it). */
  rateLimitKeyPrefix?: string
  /** DNS for webhook targets (tests give a resolver of their own). */
  lookup?: LookupFn
  /** Connect to the configured Redis; default true. Operator commands that never touch Redis skip it. */
  connectRedis?: boolean
  /** When Redis cannot be reached at start: fail (default), or serve degraded and connect when it returns (the daemon). */
  redisUnreachable?: 'fail' | 'degrade'
}

/** What /readyz reports: each backing store, the dispatch loop, and why the daemon is not ready. */
export interface Readiness {
  ready: boolean
  checks: {database: boolean; redis: boolean | null; dispatch: boolean | null}
  reasons: string[]
}

/** A dispatch loop whose every read has failed for this long is reported as stalled. */
const DISPATCH_STALLED_AFTER_MS = 15_000

/**
 * Builds every service from the configuration: shared by the daemon and the operator commands.
 * Fails with a ConfigError naming the variable when a backing store cannot be reached.
 */
export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const clock = options.clock ?? systemClock
  const masterKey = resolveMasterKey(config)
  const ownsDb = options.db === undefined
  const db = options.db ?? createDb(config.database, options.logger)
  let redis: RedisConnection | null = null
  try {
    await checkDatabase(db, config.database)
    await readPacketLimit(db)
    if (options.requireWritable) await requireWritableServer(db)
    if (options.autoMigrate ?? config.database.client === 'sqlite') await migrateLatest(db)
    if (options.requireCurrentSchema) await requireCurrentSchema(db)
    if (config.redis && (options.connectRedis ?? true))
      redis = await connectRedis(config.redis, {logger: options.logger, whenUnreachable: options.redisUnreachable})
  } catch (error) {
    if (ownsDb) await db.destroy()
    throw error
  }

  const stores = createStores(db, {statementTimeoutMs: config.statementTimeoutMs})
  const customers = new CustomersService(stores.customers, clock)
  const secrets = new SecretBox(masterKey)
  const targets: TargetPolicy = {allowHosts: config.webhookAllowHosts, lookup: options.lookup ?? systemLookup}
  const consumer = `${os.hostname()}:${process.pid}`
  const queue: DispatchQueue = redis
    ? new FallbackQueue(new RedisStreamQueue(redis, consumer, 60_000, options.logger, () => clock.now()), options.logger)
    : new MemoryQueue()
  const inFlight: InFlightSlots = redis ? new FallbackInFlightSlots(redis, new RedisInFlightSlots(redis), stores.inFlight) : stores.inFlight
  const outbox = new DeliveryOutbox(stores.webhooks, stores.deliveries, queue, options.logger)
  const webhooks = new WebhooksService(stores.webhooks, stores.deliveries, secrets, targets, clock)
  // Built when first used: the daemon's app and worker use them, operator commands never do.
  let metrics: Metrics | undefined
  let limiter: RequestLimiter | undefined
  const leadsWrite = new LeadsWriteService({
    db,
    matches: stores.leadMatches,
    leads: stores.leadWrites,
    customers: stores.customers,
    events: stores.events,
    outbox,
    idempotency: stores.idempotency,
    clock,
    createGuess: config.createGuess,
    bulkGuess: config.bulkGuess,
  })
  const getMetrics = () => (metrics ??= new Metrics(stores.deliveries, clock, () => leadsWrite))
  const keyAuthenticator = new KeyAuthenticator(stores.keys, {clock, cacheTtlMs: options.keyCacheTtlMs})
  const keys = new KeysService(stores.keys, customers, clock)

  return {
    config,
    redis,
    customers,
    keys,
    keyAuthenticator,
    leads: new LeadsService(stores.leadQueries, stores.leadChangeFeed, new CursorCodec(masterKey)),
    leadsWrite,
    leadCounts: stores.leadCounts,
    searchIndex: stores.searchIndex,
    idempotency: new IdempotencyService(stores.idempotency, clock),
    rateLimits: new RateLimitService(stores.rateLimits, customers, keys, clock, options.limitsCacheTtlMs),
    // Built when first used, like the metrics: operator commands never limit requests.
    get limiter() {
      return (limiter ??= new RequestLimiter(redis, options.logger, options.rateLimitKeyPrefix))
    },
    get metrics() {
      return getMetrics()
    },
    webhooks,
    webhookTest: new WebhookTestSend(stores.webhooks, secrets, targets, clock),
    deliveries: new DeliveriesService(stores.deliveries, webhooks, queue, stores.events, inFlight, clock),
    inFlight,
    createWorker: (workerOptions = {}) =>
      new DeliveryWorker(
        {
          db,
          deliveries: stores.deliveries,
          webhooks: stores.webhooks,
          events: stores.events,
          secrets,
          sender: new DeliverySender(targets),
          queue,
          inFlight,
          logger: options.logger ?? createLogger('silent'),
          metrics: getMetrics(),
        },
        {clock, ...workerOptions},
      ),
    galera: () => galeraMembership(db),
    galeraWriters: async (daemon, role) => ((await isGaleraNode(db)) ? new WriterNodes(db, daemon, role) : null),
    async readiness() {
      const reasons: string[] = []
      const database = await probeDatabase(db).then(
        () => true,
        (error: unknown) => (reasons.push(databaseFailureReason(error)), false),
      )
      const redisUp = redis
        ? await redis.ping().then(
            () => true,
            () => (reasons.push('redis unreachable: rate limits are per daemon and deliveries are dispatched by the sweeper'), false),
          )
        : null
      const dispatch = dispatchCheck(queue, redis, clock.now(), reasons)
      return {ready: reasons.length === 0, checks: {database, redis: redisUp, dispatch}, reasons}
    },
    async close() {
      await keyAuthenticator.flushLastUsed().catch((error: Error) => options.logger?.warn({err: error}, 'last-used flush failed'))
      await queue.close().catch(() => undefined)
      if (redis) await redis.close().catch(() => undefined)
      if (ownsDb) await db.destroy()
    },
  }
}

/** The dispatch loop is stalled when every read from Redis has failed for DISPATCH_STALLED_AFTER_MS; idle or busy is fine. */
function dispatchCheck(queue: DispatchQueue, redis: RedisConnection | null, now: number, reasons: string[]): boolean | null {
  if (!redis) return null
  const {failingSinceMs, lastError} = queue.health()
  if (failingSinceMs === null || now - failingSinceMs < DISPATCH_STALLED_AFTER_MS) return true
  reasons.push(`delivery dispatch stalled for ${Math.round((now - failingSinceMs) / 1000)} s: ${lastError ?? 'unknown error'}`)
  return false
}

async function checkDatabase(db: Db, database: Config['database']): Promise<void> {
  try {
    await pingDatabase(db)
  } catch (error) {
    throw unreachableDatabaseError(error, database)
  }
}

async function requireCurrentSchema(db: Db): Promise<void> {
  const pending = (await migrationStatus(db)).filter((migration) => !migration.applied)
  if (pending.length > 0) {
    throw new ConfigError(
      'LEADS_DATABASE_URL',
      `has ${pending.length} pending migration(s), so the daemon does not start`,
      'run `leads migrate` with the same LEADS_DATABASE_URL, then start the daemon again',
    )
  }
}
