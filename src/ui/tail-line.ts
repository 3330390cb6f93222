import type {DeliveryState} from '../deliveries/delivery-state.js'
import type {TailEntry} from '../deliveries/delivery-tail.js'
import {terminalSafe} from './terminal-text.js'

/**
 * The columns of `leads deliveries tail` on a terminal, each of a fixed width so lines align: 79
 * columns in all, one line per entry on an 80-column terminal. Ids are shortened (a delivery's
 * UUID to its first 8 characters, a webhook's to wh_ and 6); --json and a pipe keep them whole.
 */
const TAIL_COLUMNS = [
  {header: 'TIME', width: 8},
  {header: 'DELIVERY', width: 8},
  {header: 'WEBHOOK', width: 9},
  {header: '#', width: 3},
  {header: 'ANSWER', width: 10},
  {header: 'TOOK', width: 6, alignRight: true},
  {header: 'OUTCOME', width: 8},
  {header: 'STATE', width: 11},
  {header: 'NEXT', width: 8},
] as const

export const TAIL_LINE_WIDTH = TAIL_COLUMNS.reduce((sum, column) => sum + column.width, 0) + TAIL_COLUMNS.length - 1

/** The states worth a column: a delivery not ended yet. */
const UNENDED: ReadonlySet<DeliveryState> = new Set(['waiting', 'held', 'backing_off', 'delivering'])
/** The states whose next attempt is a time to wait for (a waiting delivery's is now). */
const WAITS_UNTIL: ReadonlySet<DeliveryState> = new Set(['held', 'backing_off'])

/** An entry's cells, each padded (or cut with …) to its column's width. */
export function tailCells(entry: TailEntry): string[] {
  const unended = UNENDED.has(entry.state)
  const values = [
    entry.at.slice(11, 19),
    entry.delivery_id.slice(0, 8),
    entry.webhook_id.slice(0, 9),
    entry.attempt === 0 ? '' : `#${entry.attempt}`,
    entry.attempt === 0 ? '' : shortAnswer(terminalSafe(entry.result)),
    entry.duration_ms === null ? '' : shortDuration(entry.duration_ms),
    entry.outcome,
    unended ? entry.state : '',
    WAITS_UNTIL.has(entry.state) && entry.next_attempt_at ? entry.next_attempt_at.slice(11, 19) : '',
  ]
  return values.map((value, index) => fit(value, TAIL_COLUMNS[index]!))
}

/** The column headers, padded like the cells. */
export function tailHeader(): string[] {
  return TAIL_COLUMNS.map((column) => fit(column.header, column))
}

/** What the tail has seen since it started: deliveries and attempts counted apart. */
export interface TailCounts {
  /** Deliveries queued. */
  queued: number
  /** Deliveries that succeeded (their successful attempt). */
  succeeded: number
  /** Deliveries that failed for good (an attempt with outcome final or terminal). */
  failed: number
  /** Attempts finished. */
  attempts: number
  /** Of those, attempts after a delivery's first. */
  retries: number
}

export const NO_COUNTS: TailCounts = {queued: 0, succeeded: 0, failed: 0, attempts: 0, retries: 0}

/** The counters after `entries`. */
export function countTail(counts: TailCounts, entries: readonly TailEntry[]): TailCounts {
  const next = {...counts}
  for (const entry of entries) {
    if (entry.attempt === 0) {
      next.queued++
      continue
    }
    next.attempts++
    if (entry.attempt > 1) next.retries++
    if (entry.outcome === 'success') next.succeeded++
    else if (entry.outcome === 'final' || entry.outcome === 'terminal') next.failed++
  }
  return next
}

/** The counters in one line. */
export function countsLine(counts: TailCounts): string {
  return `deliveries: ${counts.queued} queued, ${counts.succeeded} succeeded, ${counts.failed} failed · attempts: ${counts.attempts} (${counts.retries} ${counts.retries === 1 ? 'retry' : 'retries'})`
}

/** An HTTP status as is; an error by its code (`ECONNRESET: …`) or as `timeout`; else the text. */
function shortAnswer(result: string): string {
  const code = /^([A-Z][A-Z0-9_]+):/.exec(result)?.[1]
  if (code) return code
  return /time(d )?out/i.test(result) ? 'timeout' : result
}

function shortDuration(ms: number): string {
  if (ms < 10_000) return `${ms}ms`
  return ms < 100_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`
}

function fit(value: string, column: {width: number; alignRight?: boolean}): string {
  const cut = value.length <= column.width ? value : `${value.slice(0, column.width - 1)}…`
  return column.alignRight ? cut.padStart(column.width) : cut.padEnd(column.width)
}
