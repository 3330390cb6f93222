import {openBacking, type BackingOptions} from './backing.js'
import type {Config} from './config/config.js'
import {resolveMasterKey} from './config/master-key.js'
import {probeDatabase} from './db/knex.js'
import {databaseFailureReason} from './db/errors.js'
import {galeraMembership, type GaleraMembership} from './db/galera.js'
import {isGaleraNode, WriterNodes} from './db/writer-nodes.js'
import type {RedisConnection} from './db/redis.js'
import {DeliveryWorker, type WorkerOptions} from './deliveries/delivery-worker.js'
import type {DispatchQueue} from './deliveries/dispatch-queue.js'
import {DeliveryOutbox} from './deliveries/outbox.js'
import {DeliverySender} from './deliveries/sender.js'
import {IdempotencyService} from './idempotency/idempotency-service.js'
import {KeyAuthenticator} from './keys/key-authenticator.js'
import {CursorCodec} from './leads/cursor.js'
import {LeadsService} from './leads/leads-service.js'
import {LeadsWriteService} from './leads/leads-write-service.js'
import {createLogger} from './log/logger.js'
import {Metrics} from './metrics/metrics.js'
import {type OperatorServices, serviceParts} from './service-parts.js'
import {type Clock, systemClock} from './shared/clock.js'
import {createStores, storeParts} from './stores.js'
import type {LookupFn} from './webhooks/ssrf.js'

/** Every service: the operator commands' ones and the daemon's own. */
export interface Services extends OperatorServices {
  readonly config: Config
  readonly keyAuthenticator: KeyAuthenticator
  readonly leads: LeadsService
  readonly leadsWrite: LeadsWriteService
  readonly idempotency: IdempotencyService
  readonly metrics: Metrics
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

/**
 * Besides the backing options: db is an open handle on config.database to build on, kept and
 * closed by its opener after close(); tests and benchmarks pass their own, to reach rows no
 * service returns, and the daemon never does.
 */
export interface ServiceOptions extends BackingOptions {
  clock?: Clock
  keyCacheTtlMs?: number
  /** How long a key's rate limits are reused before overrides are read again. */
  limitsCacheTtlMs?: number
  /** Redis key prefix of the rate-limit counters (tests isolate daemons with it). */
  rateLimitKeyPrefix?: string
  /** DNS for webhook targets (tests give a resolver of their own). */
  lookup?: LookupFn
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
 * Builds every service from the configuration, for the daemon (and the tests and benchmarks that
 * run one). The services the operator commands use come from the same parts (serviceParts), built
 * here all at once. Fails with a ConfigError naming the variable when a backing store cannot be reached.
 */
export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const clock = options.clock ?? systemClock
  const masterKey = resolveMasterKey(config)
  const {db, redis, ownsDb} = await openBacking(config, options)
  const store = storeParts(db, {statementTimeoutMs: config.statementTimeoutMs})
  const part = serviceParts({
    db,
    config,
    masterKey,
    redis,
    stores: store,
    clock,
    logger: options.logger,
    lookup: options.lookup,
    limitsCacheTtlMs: options.limitsCacheTtlMs,
    rateLimitKeyPrefix: options.rateLimitKeyPrefix,
  })
  try {
    const stores = await createStores(db, {statementTimeoutMs: config.statementTimeoutMs}, store)
    const [customers, keys, rateLimits, limiter, webhooks, webhookTest, deliveries, inFlight, secrets, targets, queue] = await Promise.all([
      part('customers'),
      part('keys'),
      part('rateLimits'),
      part('limiter'),
      part('webhooks'),
      part('webhookTest'),
      part('deliveries'),
      part('inFlight'),
      part('secrets'),
      part('targets'),
      part('queue'),
    ])
    const outbox = new DeliveryOutbox(stores.webhooks, stores.deliveries, queue, options.logger)
    // Built when first used: the daemon's app and worker use them, tests of a service alone never do.
    let metrics: Metrics | undefined
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
      adoptMasterKey: await part('adoptMasterKey'),
      idempotency: new IdempotencyService(stores.idempotency, clock),
      rateLimits,
      limiter,
      get metrics() {
        return getMetrics()
      },
      webhooks,
      webhookTest,
      deliveries,
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
  } catch (error) {
    // A part that fails (the master key check, a store) leaves the connections the others opened:
    // closed here, or the daemon prints its one line and never exits.
    await part
      .ifBuilt('queue')
      ?.then((queue) => queue.close())
      .catch(() => undefined)
    if (redis) await redis.close().catch(() => undefined)
    if (ownsDb) await db.destroy()
    throw error
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
