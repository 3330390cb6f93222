import type {RedisConfig} from '../config/redis-config.js'
import type {Logger} from '../log/logger.js'
import {ConfigError} from '../shared/errors.js'

/**
 * The Redis commands the service sends, whatever carries them: one server, a Redis Cluster, or
 * the master Sentinel names. node-redis's client, cluster and sentinel types all have these
 * methods; the rest of the code sees only this subset. Every command and transaction touches one
 * key (see docs/operations.md, Redis Cluster), so each is routed to one slot.
 */
export interface RedisCommands {
  readonly isReady: boolean
  ping(): Promise<unknown>
  multi(): RedisTransaction
  xAck(key: string, group: string, ids: string[]): Promise<unknown>
  xGroupCreate(key: string, group: string, id: string, options: {MKSTREAM: true}): Promise<unknown>
  xReadGroup(group: string, consumer: string, streams: {key: string; id: string}, options: {COUNT: number; BLOCK: number}): Promise<unknown>
  xAutoClaim(key: string, group: string, consumer: string, minIdleTime: number, start: string, options: {COUNT: number}): Promise<unknown>
  /** A Lua script on one key (KEYS[1]), so a cluster routes it to that key's slot. */
  eval(script: string, options: {keys: [string]; arguments: string[]}): Promise<unknown>
  /** The same, by the script's SHA-1 once the server knows it (NOSCRIPT until then). */
  evalSha(sha1: string, options: {keys: [string]; arguments: string[]}): Promise<unknown>
  zRangeByScore(key: string, min: number | string, max: number | string): Promise<string[]>
}

/** A MULTI/EXEC block: every command queued in it must use keys of one slot. */
interface RedisTransaction {
  xAdd(key: string, id: string, message: Record<string, string>, options: {TRIM: {strategy: 'MAXLEN'; strategyModifier: '~'; threshold: number}}): unknown
  exec(): Promise<unknown>
}

/** A connection of its own for blocking reads, created unconnected. */
export interface RedisReader extends RedisCommands {
  readonly isOpen: boolean
  connect(): Promise<unknown>
  destroy(): unknown
}

/** The service's Redis: the shared commands, the limiter's store, and readers of their own. */
export interface RedisConnection {
  readonly mode: RedisConfig['mode']
  /** Whether commands can be sent now; while not, they fail at once rather than queue. */
  readonly isReady: boolean
  readonly commands: RedisCommands
  /** The node-redis object rate-limiter-flexible drives (it tells a client from a cluster by its shape). */
  readonly limiterStore: object
  /**
   * A connection for blocking reads that never reconnects: a blocked XREADGROUP would hold the
   * shared connection, and a reader that failed is dropped and replaced by the next take.
   */
  newReader(onError: (error: Error) => void): RedisReader
  ping(): Promise<unknown>
  close(): Promise<void>
}

const CONNECT_TIMEOUT_MS = 3000
const MAX_RECONNECT_DELAY_MS = 2000

type ReconnectStrategy = false | ((retries: number, cause: Error) => number | Error)

/** What a topology builds: the shared client, and a factory for readers that do not reconnect. */
interface Topology {
  client: RedisCommands & {connect(): Promise<unknown>; close(): Promise<unknown>; on(event: 'error' | 'ready', listener: (error: Error) => void): unknown}
  limiterStore: object
  newReader(): RedisReader & {on(event: 'error', listener: (error: Error) => void): unknown}
}

interface RedisConnectOptions {
  logger?: Logger
  /**
   * When the first connection fails: `fail` (operator commands, tests) throws a ConfigError
   * naming the Redis variable; `degrade` (the daemon) returns the connection still trying in the
   * background, so the API serves with its fallbacks (in-memory limits, sweeper dispatch) until
   * Redis comes back.
   */
  whenUnreachable?: 'fail' | 'degrade'
}

/**
 * Connects to Redis as configured. After a first connection (or from the start, when degraded)
 * the client reconnects on its own with capped backoff, logging each distinct failure once.
 */
export async function connectRedis(config: RedisConfig, options: RedisConnectOptions = {}): Promise<RedisConnection> {
  const {logger, whenUnreachable = 'fail'} = options
  let keepTrying = whenUnreachable === 'degrade'
  const topology = await buildTopology(config, (retries, cause) => (keepTrying ? Math.min(50 * 2 ** retries, MAX_RECONNECT_DELAY_MS) : cause))
  const {client} = topology
  let closed = false
  let lastError = ''
  client.on('error', (error: Error) => {
    // node-redis emits the same error on every reconnect attempt; log changes only.
    if (error.message !== lastError) logger?.warn({err: error}, 'redis connection error')
    lastError = error.message
  })
  client.on('ready', () => {
    if (lastError) logger?.info('redis connected')
    lastError = ''
  })
  const connection: RedisConnection = {
    mode: config.mode,
    get isReady() {
      return client.isReady
    },
    commands: client,
    limiterStore: topology.limiterStore,
    newReader(onError) {
      const reader = topology.newReader()
      reader.on('error', onError)
      return reader
    },
    ping: () => client.ping(),
    close: async () => {
      closed = true
      await client.close()
    },
  }

  if (whenUnreachable === 'degrade') {
    const connecting = connectUntilClosed(client, () => closed)
    // The first attempt gets the usual connect timeout; after that the client keeps retrying alone.
    const connected = await Promise.race([connecting.then(() => true), sleep(CONNECT_TIMEOUT_MS + 500).then(() => false)])
    if (!connected) logger?.warn('redis unreachable at start: serving degraded (rate limits per daemon, dispatch by the sweeper) until it returns')
    connecting.catch(() => undefined)
    return connection
  }
  try {
    await client.connect()
  } catch (error) {
    const variable = variableOf(config)
    throw new ConfigError(
      variable,
      `cannot be reached: ${(error as Error).message}`,
      `is Redis running there? Start it, or fix the host and port in ${variable}`,
    )
  }
  keepTrying = true
  return connection
}

/** The variable an operator fixes when this Redis cannot be reached. */
export function variableOf(config: RedisConfig): string {
  return {single: 'LEADS_REDIS_URL', cluster: 'LEADS_REDIS_CLUSTER_NODES', sentinel: 'LEADS_REDIS_SENTINELS'}[config.mode]
}

/**
 * A single-server client keeps retrying its first connection by itself; cluster and sentinel
 * clients give up after one round of their nodes (RootNodesUnavailableError), so the daemon asks
 * again with the same capped backoff until it connects or is closed.
 */
async function connectUntilClosed(client: Topology['client'], isClosed: () => boolean): Promise<void> {
  for (let attempt = 0; !isClosed(); attempt++) {
    try {
      await client.connect()
      return
    } catch {
      await sleep(Math.min(50 * 2 ** attempt, MAX_RECONNECT_DELAY_MS))
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/**
 * The redis module is loaded here, on the first connection: commands and daemons without Redis
 * never load it (a good part of a start-up). Every client fails commands at once while disconnected instead of
 * queueing them: callers (enqueue, the rate limiter) have a fallback, and a queued command would
 * hang the request that sent it.
 */
async function buildTopology(config: RedisConfig, reconnectStrategy: ReconnectStrategy): Promise<Topology> {
  const {createClient, createCluster, createSentinel} = await import('redis')
  const socket = (strategy: ReconnectStrategy) => ({connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: strategy})

  if (config.mode === 'single') {
    const build = (strategy: ReconnectStrategy) => createClient({url: config.url, disableOfflineQueue: true, socket: socket(strategy)})
    const client = build(reconnectStrategy)
    return {client, limiterStore: client, newReader: () => build(false)}
  }

  const auth = {...(config.username ? {username: config.username} : {}), ...(config.password ? {password: config.password} : {})}
  const nodeSocket = (strategy: ReconnectStrategy) => ({...socket(strategy), ...(config.tls ? {tls: true as const} : {})})

  if (config.mode === 'cluster') {
    // Seed nodes only: the cluster names its other nodes, which get the same credentials and TLS.
    const build = (strategy: ReconnectStrategy) =>
      createCluster({
        rootNodes: config.nodes.map(({host, port}) => ({socket: {host, port}})),
        defaults: {...auth, disableOfflineQueue: true, socket: nodeSocket(strategy)},
      })
    const client = build(reconnectStrategy)
    return {client, limiterStore: client, newReader: () => build(false)}
  }

  const build = (strategy: ReconnectStrategy) =>
    createSentinel({
      name: config.masterName,
      sentinelRootNodes: config.sentinels.map(({host, port}) => ({host, port})),
      nodeClientOptions: {...auth, disableOfflineQueue: true, socket: nodeSocket(strategy)},
      sentinelClientOptions: {...auth, socket: nodeSocket(strategy)},
    })
  const client = build(reconnectStrategy)
  return {client, limiterStore: client, newReader: () => build(false)}
}
