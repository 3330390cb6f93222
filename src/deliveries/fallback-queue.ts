import type {Logger} from '../log/logger.js'
import {type DispatchHealth, type DispatchQueue, MemoryQueue} from './dispatch-queue.js'
import type {RedisStreamQueue} from './redis-stream-queue.js'

/** How long a take waits on the local queue while Redis is away, before looking at Redis again. */
const LOCAL_BLOCK_MS = 1000
/** Each warning of a Redis outage is logged once per this interval, not once per create. */
const WARNING_INTERVAL_MS = 30_000

/**
 * Redis dispatch with a local fallback, so a Redis outage never stops delivery: while Redis is
 * disconnected or failing, ids go to (and come from) this process's own memory queue. The
 * sweeper of each worker process finds deliveries that only reached another process's memory
 * (or none) in the database and dispatches them here, so nothing waits for Redis to return.
 */
export class FallbackQueue implements DispatchQueue {
  private readonly local = new MemoryQueue()
  /** When each warning was last logged. */
  private readonly warnedAt = new Map<string, number>()

  constructor(
    private readonly redis: RedisStreamQueue,
    private readonly logger?: Logger,
  ) {}

  async enqueue(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return
    try {
      return await this.redis.enqueue(ids)
    } catch (error) {
      this.warn(error as Error, 'redis enqueue failed; deliveries are dispatched by this process and the sweeper until it works')
    }
    await this.local.enqueue(ids)
  }

  async take(max: number, blockMs: number): Promise<string[]> {
    const local = await this.local.take(max, 0)
    if (local.length > 0) return local
    if (!this.redis.isAvailable) return this.local.take(max, Math.min(blockMs, LOCAL_BLOCK_MS))
    try {
      return await this.redis.take(max, blockMs)
    } catch (error) {
      this.warn(error as Error, 'redis dispatch read failed; taking deliveries from this process and the sweeper until it works')
      return this.local.take(max, Math.min(blockMs, LOCAL_BLOCK_MS))
    }
  }

  async ack(ids: readonly string[]): Promise<void> {
    await this.redis.ack(ids)
  }

  health(): DispatchHealth {
    return this.redis.health()
  }

  private warn(error: Error, message: string): void {
    const now = Date.now()
    if (now - (this.warnedAt.get(message) ?? 0) < WARNING_INTERVAL_MS) return
    this.warnedAt.set(message, now)
    this.logger?.warn({err: error}, message)
  }

  async close(): Promise<void> {
    await this.local.close()
    await this.redis.close()
  }
}
