import type {RedisCommands, RedisConnection, RedisReader} from '../db/redis.js'
import type {Logger} from '../log/logger.js'
import type {DispatchHealth, DispatchQueue} from './dispatch-queue.js'

export const STREAM_KEY = 'leads:deliveries'
export const CONSUMER_GROUP = 'workers'
const STREAM_MAXLEN = 100_000
/**
 * An enqueue that has not answered by then is abandoned: the delivery row is already committed
 * and marked dispatched, so the sweeper sends it once `redispatchAfterMs` has passed. This is
 * what keeps a create fast when Redis hangs rather than refuses.
 */
const ENQUEUE_TIMEOUT_MS = 250

/**
 * A Redis Stream with one consumer group: each entry goes to one worker; entries a dead worker
 * left unacknowledged are claimed by another after `staleAfterMs`. A flushed or restarted-empty
 * Redis loses the group: any command that answers NOGROUP recreates it and runs once more.
 */
export class RedisStreamQueue implements DispatchQueue {
  /** Stream entry ids per delivery id, for XACK. */
  private readonly entries = new Map<string, string[]>()
  private reader: RedisReader | null = null
  /** The read under way: reads take turns on the one blocking connection (see take). */
  private reading: Promise<unknown> = Promise.resolve()
  /** Counts close() calls: a read begun before the latest one ends empty, without opening a connection. */
  private closes = 0
  private groupReady = false
  private failingSinceMs: number | null = null
  private lastError: string | null = null

  constructor(
    private readonly connection: RedisConnection,
    private readonly consumer: string,
    private readonly staleAfterMs = 60_000,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the shared client is connected; while it is not, every command fails at once. */
  get isAvailable(): boolean {
    return this.connection.isReady
  }

  private get redis(): RedisCommands {
    return this.connection.commands
  }

  async enqueue(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return
    // MULTI/EXEC waits for a reconnect instead of failing like a plain command; refuse up front.
    if (!this.redis.isReady) throw new Error('redis is not connected')
    const multi = this.redis.multi()
    for (const id of ids) {
      multi.xAdd(STREAM_KEY, '*', {delivery: id}, {TRIM: {strategy: 'MAXLEN', strategyModifier: '~', threshold: STREAM_MAXLEN}})
    }
    await withTimeout(multi.exec(), ENQUEUE_TIMEOUT_MS, 'redis enqueue timed out')
  }

  /**
   * Reads take turns: every worker of a process shares its queue, and a second read sent while
   * the reader is still connecting, or blocked in XREADGROUP, would fail or be dropped with it.
   */
  take(max: number, blockMs: number): Promise<string[]> {
    const closes = this.closes
    const turn = this.reading.then(() => (closes === this.closes ? this.read(max, blockMs, closes) : []))
    this.reading = turn.catch(() => undefined)
    return turn
  }

  private async read(max: number, blockMs: number, closes: number): Promise<string[]> {
    try {
      const ids = await this.withGroup(async () => {
        const reader = await this.readerClient(closes)
        const stale = await this.claimStale(reader, max)
        if (stale.length > 0) return stale
        const response = await reader.xReadGroup(CONSUMER_GROUP, this.consumer, {key: STREAM_KEY, id: '>'}, {COUNT: max, BLOCK: blockMs})
        const streams = (response ?? []) as Array<{messages: Array<{id: string; message: Record<string, string>}>}>
        return streams.flatMap((stream) => stream.messages.flatMap((entry) => this.remember(entry)))
      })
      this.failingSinceMs = null
      this.lastError = null
      return ids
    } catch (error) {
      // Ended by close(), which destroyed the reader under it: a stop, not a failure of Redis.
      if (closes !== this.closes) return []
      this.failingSinceMs ??= this.now()
      this.lastError = (error as Error).message
      // A reader that failed may be half-closed; the next round opens a fresh one.
      this.dropReader()
      throw error
    }
  }

  async ack(ids: readonly string[]): Promise<void> {
    const entryIds = ids.flatMap((id) => {
      const entries = this.entries.get(id) ?? []
      this.entries.delete(id)
      return entries
    })
    // XACK on a group that no longer exists answers NOGROUP: nothing is left to acknowledge.
    if (entryIds.length > 0) await this.redis.xAck(STREAM_KEY, CONSUMER_GROUP, entryIds).catch(ignoreNoGroup)
  }

  health(): DispatchHealth {
    return {failingSinceMs: this.failingSinceMs, lastError: this.lastError}
  }

  /** Ends the read under way and those waiting their turn; a read begun afterwards (another worker's) opens a new reader. */
  async close(): Promise<void> {
    this.closes++
    this.dropReader()
  }

  /** Runs `operation`; when Redis answers NOGROUP (flushed, or restarted without data) recreates the group and runs it once more. */
  private async withGroup<T>(operation: () => Promise<T>): Promise<T> {
    await this.ensureGroup()
    try {
      return await operation()
    } catch (error) {
      if (!isNoGroup(error)) throw error
      this.logger?.warn('the delivery stream lost its consumer group (Redis flushed or restarted empty); recreating it')
      this.groupReady = false
      await this.ensureGroup()
      return operation()
    }
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

  private async claimStale(reader: RedisCommands, max: number): Promise<string[]> {
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

  /**
   * The blocking reads get a connection of their own, which does not reconnect: a failed reader
   * is dropped and the next take opens a new one, so a take never waits on a reconnect loop.
   */
  private async readerClient(closes: number): Promise<RedisReader> {
    if (this.reader) return this.reader
    const reader = this.connection.newReader((error) => this.logger?.debug({err: error}, 'redis dispatch connection error'))
    this.reader = reader
    await reader.connect()
    // Destroying a client mid-connect does not stop the connection: one that close() dropped meanwhile is ended here.
    if (closes !== this.closes) {
      reader.destroy()
      throw new Error('the dispatch queue was closed')
    }
    return reader
  }

  private dropReader(): void {
    const reader = this.reader
    this.reader = null
    // A blocked XREADGROUP holds the connection; destroying it ends the wait at once.
    if (reader?.isOpen) reader.destroy()
  }
}

function isNoGroup(error: unknown): boolean {
  return String((error as Error)?.message).includes('NOGROUP')
}

function ignoreNoGroup(error: unknown): void {
  if (!isNoGroup(error)) throw error
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
