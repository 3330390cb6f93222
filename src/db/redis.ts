import type {createClient} from 'redis'

import type {Logger} from '../log/logger.js'
import {ConfigError} from '../shared/errors.js'

export type RedisClient = ReturnType<typeof createClient>

const CONNECT_TIMEOUT_MS = 3000
const MAX_RECONNECT_DELAY_MS = 2000

export interface RedisConnectOptions {
  logger?: Logger
  /**
   * When the first connection fails: `fail` (operator commands, tests) throws a ConfigError
   * naming LEADS_REDIS_URL; `degrade` (the daemon) returns the client still connecting in the
   * background, so the API serves with its fallbacks (in-memory limits, sweeper dispatch) until
   * Redis comes back.
   */
  whenUnreachable?: 'fail' | 'degrade'
}

/**
 * Connects to Redis. After a first connection (or from the start, when degraded) the client
 * reconnects on its own with capped backoff, logging each distinct failure once.
 */
export async function connectRedis(url: string, options: RedisConnectOptions = {}): Promise<RedisClient> {
  const {logger, whenUnreachable = 'fail'} = options
  let keepTrying = whenUnreachable === 'degrade'
  const client = await newClient(url, (retries, cause) => (keepTrying ? Math.min(50 * 2 ** retries, MAX_RECONNECT_DELAY_MS) : cause))
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
  const connecting = client.connect()
  if (whenUnreachable === 'degrade') {
    // The first attempt gets the usual connect timeout; after that the client keeps retrying alone.
    const connected = await Promise.race([connecting.then(() => true), sleep(CONNECT_TIMEOUT_MS + 500).then(() => false)])
    if (!connected) logger?.warn('redis unreachable at start: serving degraded (rate limits per daemon, dispatch by the sweeper) until it returns')
    connecting.catch(() => undefined)
    return client
  }
  try {
    await connecting
  } catch (error) {
    throw new ConfigError('LEADS_REDIS_URL', `cannot be reached: ${(error as Error).message}`)
  }
  keepTrying = true
  return client
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/** The redis module is loaded here, on the first connection: commands and daemons without Redis never load it (130 ms). */
async function newClient(url: string, reconnectStrategy: (retries: number, cause: Error) => number | Error): Promise<RedisClient> {
  const {createClient} = await import('redis')
  // Fail commands at once while disconnected instead of queueing them: callers (enqueue, the
  // rate limiter) have a fallback, and a queued command would hang the request that sent it.
  return createClient({url, disableOfflineQueue: true, socket: {connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy}})
}
