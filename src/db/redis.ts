import {createClient} from 'redis'

import type {Logger} from '../log/logger.js'
import {ConfigError} from '../shared/errors.js'

export type RedisClient = ReturnType<typeof newClient>

const CONNECT_TIMEOUT_MS = 3000

/**
 * Connects to Redis or fails with a ConfigError naming LEADS_REDIS_URL. After the first
 * connection the client reconnects on its own with capped backoff, logging each failure once.
 */
export async function connectRedis(url: string, logger?: Logger): Promise<RedisClient> {
  let connectedOnce = false
  const client = newClient(url, (retries, cause) => (connectedOnce ? Math.min(50 * 2 ** retries, 2000) : cause))
  let lastError = ''
  client.on('error', (error: Error) => {
    // node-redis emits the same error on every reconnect attempt; log changes only.
    if (error.message !== lastError) logger?.warn({err: {message: error.message}}, 'redis connection error')
    lastError = error.message
  })
  client.on('ready', () => {
    lastError = ''
  })
  try {
    await client.connect()
  } catch (error) {
    throw new ConfigError('LEADS_REDIS_URL', `cannot be reached: ${(error as Error).message}`)
  }
  connectedOnce = true
  return client
}

function newClient(url: string, reconnectStrategy: (retries: number, cause: Error) => number | Error) {
  // Fail commands at once while disconnected instead of queueing them: callers (enqueue, the
  // rate limiter) have a fallback, and a queued command would hang the request that sent it.
  return createClient({url, disableOfflineQueue: true, socket: {connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy}})
}
