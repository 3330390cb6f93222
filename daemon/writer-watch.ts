import os from 'node:os'
import {randomBytes} from 'node:crypto'

import {HEARTBEAT_MS, type MultiWriter, multiWriter, type WriterNodes} from '../src/db/writer-nodes.js'
import type {Logger} from '../src/log/logger.js'

/** While daemons write through several nodes, the error is logged again this often. */
const REPEAT_MS = 60_000

/** A name for this daemon in database_writers: its role, host and process, and a few random bytes (a container's pid is often 1). */
export function writerName(role: string): string {
  return `${role}@${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
}

/**
 * On a Galera cluster, records every HEARTBEAT_MS the node this daemon writes through, and checks
 * whether any two daemons write through different nodes at once (src/db/writer-nodes.ts): an
 * error in the log when it starts, again every minute while it lasts, and a line when it ends;
 * `multiWriterNodes` for the metric. A failing record or check is logged as a warning and tried
 * again at the next beat: the database being away is /readyz's to report.
 */
export class WriterWatch {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> | null = null
  private found: MultiWriter | null = null
  private loggedAt = 0

  constructor(
    private readonly writers: WriterNodes,
    private readonly logger: Logger,
  ) {}

  /** The number of nodes daemons write through at once: 1 while there is one writer node (or none live yet). */
  get multiWriterNodes(): number {
    return this.found ? this.found.nodes.length : 1
  }

  /** Records once, checks once, then keeps beating. */
  async start(): Promise<void> {
    await this.beat()
    this.timer = setInterval(() => {
      this.running ??= this.beat().finally(() => (this.running = null))
    }, HEARTBEAT_MS)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.running
    await this.writers.forget().catch((error: Error) => this.logger.warn({err: error}, 'could not delete this daemon’s writer record'))
  }

  private async beat(): Promise<void> {
    try {
      await this.writers.heartbeat()
      const {now, stretches} = await this.writers.stretches()
      this.report(multiWriter(stretches, now))
    } catch (error) {
      this.logger.warn({err: error}, 'could not record the Galera node this daemon writes through')
    }
  }

  private report(found: MultiWriter | null): void {
    const before = this.found
    this.found = found
    if (!found) {
      // A warning, not info: whoever was shown the error at warn level sees it end.
      if (before) this.logger.warn({nodes: before.nodes}, 'daemons write through one Galera node again')
      return
    }
    const changed = !before || before.nodes.join() !== found.nodes.join()
    if (!changed && Date.now() - this.loggedAt < REPEAT_MS) return
    this.loggedAt = Date.now()
    this.logger.error(
      {nodes: found.nodes, writers: found.writers.map((writer) => ({daemon: writer.daemon, node: writer.nodeName}))},
      `daemons write through ${found.nodes.length} Galera nodes at once (${found.nodes.join(', ')}): several writers are not supported, the 20-webhook limit, the in-flight cap without Redis and the change feed can break; point every daemon at one balancer with one active node (docs/operations.md, "Several writers are detected")`,
    )
  }
}
