import type {RedisClient} from '../db/redis.js'
import type {Logger} from '../log/logger.js'

/**
 * Hands delivery ids from the process that wrote them to a worker. It only dispatches: the
 * database holds every delivery, and the sweeper re-enqueues what a queue lost.
 */
export interface DispatchQueue {
  enqueue(ids: readonly string[]): Promise<void>
  /** Up to `max` ids, waiting at most `blockMs` for the first. */
  take(max: number, blockMs: number): Promise<string[]>
  /** Done with an id taken from this queue (delivered, failed for good, or not ours to deliver). */
  ack(id: string): Promise<void>
  close(): Promise<void>
}

/**
 * In-process queue of the embedded default: the API and the worker share one process. It is
 * bounded: an API-only process has no reader, and the sweeper re-dispatches whatever is dropped.
 */
export class MemoryQueue implements DispatchQueue {
  private readonly ids: string[] = []
  private wake: (() => void) | null = null

  constructor(private readonly capacity = 10_000) {}

  async enqueue(ids: readonly string[]): Promise<void> {
    this.ids.push(...ids)
    if (this.ids.length > this.capacity) this.ids.splice(0, this.ids.length - this.capacity)
    this.wake?.()
  }

  async take(max: number, blockMs: number): Promise<string[]> {
    if (this.ids.length === 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, blockMs)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = null
    }
    return this.ids.splice(0, max)
  }

  async ack(): Promise<void> {}

  async close(): Promise<void> {
    this.wake?.()
  }
}

export const STREAM_KEY = 'leads:deliveries'
export const CONSUMER_GROUP = 'workers'
const STREAM_MAXLEN = 100_000

/**
 * A Redis Stream with one consumer group: each entry goes to one worker; entries a dead worker
 * left unacknowledged are claimed by another after `staleAfterMs`.
 */
export class RedisStreamQueue implements DispatchQueue {
  /** Stream entry ids per delivery id, for XACK. */
  private readonly entries = new Map<string, string[]>()
  private reader: RedisClient | null = null
  private groupReady = false

  constructor(
    private readonly redis: RedisClient,
    private readonly consumer: string,
    private readonly staleAfterMs = 60_000,
    private readonly logger?: Logger,
  ) {}

  async enqueue(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return
    const multi = this.redis.multi()
    for (const id of ids) {
      multi.xAdd(STREAM_KEY, '*', {delivery: id}, {TRIM: {strategy: 'MAXLEN', strategyModifier: '~', threshold: STREAM_MAXLEN}})
    }
    await multi.exec()
  }

  async take(max: number, blockMs: number): Promise<string[]> {
    const reader = await this.readerClient()
    await this.ensureGroup()
    const stale = await this.claimStale(reader, max)
    if (stale.length > 0) return stale
    let response: Awaited<ReturnType<RedisClient['xReadGroup']>>
    try {
      response = await reader.xReadGroup(CONSUMER_GROUP, this.consumer, {key: STREAM_KEY, id: '>'}, {COUNT: max, BLOCK: blockMs})
    } catch (error) {
      // A flushed Redis loses the group too; recreate it on the next round.
      if (String((error as Error).message).includes('NOGROUP')) this.groupReady = false
      throw error
    }
    const streams = (response ?? []) as Array<{messages: Array<{id: string; message: Record<string, string>}>}>
    return streams.flatMap((stream) => stream.messages.flatMap((entry) => this.remember(entry)))
  }

  async ack(id: string): Promise<void> {
    const entryIds = this.entries.get(id)
    this.entries.delete(id)
    if (entryIds && entryIds.length > 0) await this.redis.xAck(STREAM_KEY, CONSUMER_GROUP, entryIds)
  }

  async close(): Promise<void> {
    const reader = this.reader
    this.reader = null
    // A blocked XREADGROUP holds the connection; destroying it ends the wait at once.
    reader?.destroy()
  }

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return
    try {
      await this.redis.xGroupCreate(STREAM_KEY, CONSUMER_GROUP, '0', {MKSTREAM: true})
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error
    }
    this.groupReady = true
  }

  private async claimStale(reader: RedisClient, max: number): Promise<string[]> {
    const result = (await reader.xAutoClaim(STREAM_KEY, CONSUMER_GROUP, this.consumer, this.staleAfterMs, '0-0', {COUNT: max})) as {
      messages: Array<{id: string; message: Record<string, string>} | null>
    }
    return result.messages.flatMap((entry) => (entry ? this.remember(entry) : []))
  }

  private remember(entry: {id: string; message: Record<string, string>}): string[] {
    const id = entry.message['delivery']
    if (!id) return []
    this.entries.set(id, [...(this.entries.get(id) ?? []), entry.id])
    return [id]
  }

  private async readerClient(): Promise<RedisClient> {
    if (!this.reader) {
      const reader = this.redis.duplicate() as RedisClient
      reader.on('error', (error: Error) => this.logger?.warn({err: {message: error.message}}, 'redis dispatch connection error'))
      // Kept before connecting, so close() can end a connection attempt still in progress.
      this.reader = reader
      await reader.connect()
    }
    return this.reader
  }
}
