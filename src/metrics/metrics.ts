import {createRequire} from 'node:module'

import type {Counter, Histogram, Registry} from 'prom-client'

import type {DeliveriesStore} from '../deliveries/deliveries-store.js'
import type {Clock} from '../shared/clock.js'
import {memoryAfterMajorGc} from './memory-after-gc.js'

/** How the write path's guesses went (LeadsWriteService.groupsWritten and bulkGuesses). */
interface WriteCounts {
  /** Groups of single creates written as new, checked, and guessed then checked. */
  groupsWritten: {asNew: number; checked: number; guessRefused: number}
  /** Bulk writes planned on the guess (used) and planned again after their reads (dropped). */
  bulkGuesses: {used: number; dropped: number}
}

const NO_WRITES: WriteCounts = {groupsWritten: {asNew: 0, checked: 0, guessRefused: 0}, bulkGuesses: {used: 0, dropped: 0}}

/**
 * The daemon's Prometheus metrics, in a registry of its own (so tests and several daemons in one
 * process do not share counters). The delivery backlog gauges read the database when scraped.
 */
export class Metrics {
  readonly registry: Registry
  readonly httpRequests: Counter<'method' | 'route' | 'status'>
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>
  readonly deliveries: Counter<'outcome'>
  readonly rateLimited: Counter<'bucket'>
  readonly breakerTransitions: Counter<'to'>
  readonly firstAttemptDelay: Histogram
  /** The delivery worker's deliveries by state (delivery-state.ts), when this process runs one. */
  private workerStates: (() => Record<string, number>) | null = null
  /** How many Galera nodes the daemons write through at once, when the database is a Galera node. */
  private writerNodes: (() => number) | null = null

  constructor(deliveriesStore: DeliveriesStore, clock: Clock, writes: () => WriteCounts = () => NO_WRITES) {
    // Required here, not imported: only a daemon builds its metrics (see services.ts), and prom-client
    // would add its loading to every operator command's start-up (npm run bench:cli measures it).
    const {Counter, Gauge, Histogram, Registry} = createRequire(import.meta.url)('prom-client') as typeof import('prom-client')
    this.registry = new Registry()
    const registers = [this.registry]
    this.httpRequests = new Counter({
      name: 'leads_http_requests_total',
      help: 'API requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    })
    this.httpDuration = new Histogram({
      name: 'leads_http_request_duration_seconds',
      help: 'API request latency by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    })
    this.deliveries = new Counter({name: 'leads_webhook_deliveries_total', help: 'Finished webhook deliveries by outcome', labelNames: ['outcome'], registers})
    this.breakerTransitions = new Counter({
      name: 'leads_webhook_breaker_transitions_total',
      help: 'Webhook circuit breaker changes, by the state entered',
      labelNames: ['to'],
      registers,
    })
    this.firstAttemptDelay = new Histogram({
      name: 'leads_webhook_first_attempt_delay_seconds',
      help: 'Time from a delivery being written (its lead created) to its first attempt going out',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    })
    const states = () => this.workerStates?.() ?? {}
    new Gauge({
      name: 'leads_webhook_deliveries_held',
      help: "Deliveries this process's worker holds, by state: waiting (its turn), held (breaker open), backing_off, delivering",
      labelNames: ['state'],
      registers,
      collect() {
        for (const [state, count] of Object.entries(states())) this.set({state}, count)
      },
    })
    const writerNodes = () => this.writerNodes?.()
    new Gauge({
      name: 'leads_galera_writer_nodes',
      help: 'Galera nodes the daemons write through at the same time: 1 with one writer node, more is a multi-writer setup the service does not support (absent when the database is no Galera node)',
      registers,
      collect() {
        const nodes = writerNodes()
        if (nodes !== undefined) this.set(nodes)
      },
    })
    this.rateLimited = new Counter({name: 'leads_rate_limited_total', help: 'Requests refused with 429, by bucket', labelNames: ['bucket'], registers})
    new Counter({
      name: 'leads_create_groups_total',
      help: 'Groups of single creates written: as_new (one round trip, guessing all new people), checked (read first), guess_refused (guessed, then written checked)',
      labelNames: ['way'],
      registers,
      collect() {
        const counts = writes().groupsWritten
        this.reset()
        this.inc({way: 'as_new'}, counts.asNew)
        this.inc({way: 'checked'}, counts.checked)
        this.inc({way: 'guess_refused'}, counts.guessRefused)
      },
    })
    new Counter({
      name: 'leads_bulk_plans_total',
      help: 'Bulk writes by how they were planned: guessed (while their reads were out, every row a new person), replanned (the reads found a match or a changed setup); dry runs and bulks not guessed are in neither',
      labelNames: ['way'],
      registers,
      collect() {
        const counts = writes().bulkGuesses
        this.reset()
        this.inc({way: 'guessed'}, counts.used)
        this.inc({way: 'replanned'}, counts.dropped)
      },
    })
    let backlog: Promise<{pending: number; oldestCreatedAt: number | null}> | null = null
    // Both gauges come from one query per scrape.
    const readBacklog = () => (backlog ??= deliveriesStore.backlog().finally(() => setTimeout(() => (backlog = null), 0)))
    new Gauge({
      name: 'leads_webhook_queue_depth',
      help: 'Deliveries not finished yet (pending or being delivered)',
      registers,
      async collect() {
        this.set((await readBacklog()).pending)
      },
    })
    const memory = memoryAfterMajorGc()
    new Gauge({
      name: 'leads_memory_after_major_gc_bytes',
      help: 'Live heap and RSS right after the latest full garbage collection (what a leak raises; absent before the first)',
      labelNames: ['kind'],
      registers,
      collect() {
        if (memory.heapUsed !== null) this.set({kind: 'heap_used'}, memory.heapUsed)
        if (memory.rss !== null) this.set({kind: 'rss'}, memory.rss)
      },
    })
    new Counter({
      name: 'leads_major_gc_total',
      help: 'Full garbage collections of the process so far: a new one means leads_memory_after_major_gc_bytes is a new reading',
      registers,
      collect() {
        this.reset()
        this.inc(memory.collections)
      },
    })
    new Gauge({
      name: 'leads_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest unfinished delivery; 0 when there is none',
      registers,
      async collect() {
        const {oldestCreatedAt} = await readBacklog()
        this.set(oldestCreatedAt === null ? 0 : (clock.now() - oldestCreatedAt) / 1000)
      },
    })
  }
  /** Reports a delivery worker's held deliveries by state in leads_webhook_deliveries_held. */
  reportWorkerStates(states: () => Record<string, number>): void {
    this.workerStates = states
  }
  /** Reports the daemon's view of the Galera nodes written through in leads_galera_writer_nodes. */
  reportWriterNodes(nodes: () => number): void {
    this.writerNodes = nodes
  }
}
