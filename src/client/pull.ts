import {setTimeout as delay} from 'node:timers/promises'

import {ValidationError} from '../shared/errors.js'
import {ApiRequestError, type LeadsApiClient, type RateLimitState} from './api-client.js'
import {OutputClosedError, type LeadWriter} from './lead-writer.js'
import {type LoadedState, loadState, type PullState, saveState} from './pull-state.js'

export interface PullProgress {
  pages: number
  leads: number
  rateLimit: RateLimitState | null
  /** updated_at of the last lead written. */
  position: string | null
  /** True while waiting for the next poll in --follow mode. */
  caughtUp: boolean
}

interface PullOptions {
  baseUrl: string
  customerId: string
  /** Null runs without a state file (--no-state): nothing is read or saved. */
  stateFile: string | null
  /** Where a run without a saved position starts; an existing state file wins. */
  since?: string
  pageSize: number
  includeCustomFields: boolean
  follow: boolean
  intervalMs: number
  writer: LeadWriter
  /**
   * How many bytes of output its reader may not have consumed yet when the output closes: a pipe's
   * capacity (64 KiB on Linux), 0 for a file. A position is saved only once this much more has been
   * written after it, so a reader that stops early (`| head`) never makes the state skip leads.
   */
  unreadOutputBytes?: number
  signal?: AbortSignal
  /** Told once, before the first page, where the run starts (state file, conversion, ignored --since). */
  onStart?: (start: PullStart) => void
  /** Called after each page is written and saved; awaited, so a slow view slows the pull, not memory. */
  onProgress?: (progress: PullProgress) => void | Promise<void>
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

/** Where a run starts, for the notice on stderr. */
export interface PullStart {
  resumed: PullState | null
  convertedFrom?: string
  sinceIgnored: boolean
}

export interface PullSummary {
  pages: number
  leads: number
  state: PullState
  /** The output was closed by its reader (`| head`): the run ended early, saving only what was written. */
  outputClosed: boolean
}

/**
 * Incremental sync on the change feed (`sync=true`): each committed change once, in commit
 * order. A page is written and flushed before its position is saved, so a run killed at any
 * moment resumes without losing a lead; a resumed run with nothing changed writes nothing.
 */
export async function pullLeads(client: LeadsApiClient, options: PullOptions): Promise<PullSummary> {
  const sleep = options.sleep ?? sleepUnlessAborted
  const loaded = options.stateFile === null ? null : loadState(options.stateFile)
  checkOwner(loaded, options)
  let state: PullState = loaded?.state ?? {
    version: 2,
    base_url: options.baseUrl,
    customer_id: options.customerId,
    cursor: null,
    leads_pulled: 0,
    saved_at: new Date().toISOString(),
  }
  const resumed = loaded !== null && (loaded.state.cursor !== null || loaded.convertedFrom !== undefined) ? loaded.state : null
  const startAt = resumed ? loaded?.convertedFrom : options.since
  options.onStart?.({resumed, convertedFrom: loaded?.convertedFrom, sinceIgnored: resumed !== null && options.since !== undefined})
  const progress: PullProgress = {pages: 0, leads: 0, rateLimit: null, position: null, caughtUp: false}
  const positions = new SavedPositions(options.stateFile, options.unreadOutputBytes ?? 0)

  try {
    await options.writer.start()
    while (!options.signal?.aborted) {
      const query: Record<string, string> = {sync: 'true', limit: String(options.pageSize), include_custom_fields: String(options.includeCustomFields)}
      if (state.cursor !== null) query['cursor'] = state.cursor
      else if (startAt !== undefined) query['updated_since'] = startAt
      const answer = await client.listLeads(query).catch((error: unknown) => {
        // Stopped (Ctrl-C, SIGTERM) during a request or a wait: the run ends as between pages.
        if (options.signal?.aborted) return null
        throw savedPositionRefused(error, state.cursor, options.stateFile) ?? error
      })
      if (answer === null) break
      const {body, rateLimit} = answer

      await options.writer.page(body.leads)
      state = {...state, cursor: body.next_cursor, leads_pulled: state.leads_pulled + body.leads.length, saved_at: new Date().toISOString()}
      positions.written(state, options.writer.bytesWritten)

      progress.pages += 1
      progress.leads += body.leads.length
      progress.rateLimit = rateLimit
      progress.position = body.leads.at(-1)?.updated_at ?? progress.position
      progress.caughtUp = body.has_more !== true
      await options.onProgress?.({...progress})

      if (body.has_more === true) continue
      if (!options.follow) break
      await sleep(options.intervalMs, options.signal)
    }
    await options.writer.end()
    // The reader took everything: the newest position is safe to keep.
    positions.flush()
  } catch (error) {
    // The reader went away (`leads pull | head`): what was written is saved, nothing more.
    if (error instanceof OutputClosedError) return {pages: progress.pages, leads: progress.leads, state, outputClosed: true}
    throw error
  }
  return {pages: progress.pages, leads: progress.leads, state, outputClosed: false}
}

/**
 * Saves positions once their output is surely read: right away for a file, and for a pipe only
 * after a pipe's worth of later output was written, since until then the reader may still close
 * with the page unread.
 */
class SavedPositions {
  private pending: Array<{state: PullState; at: number}> = []

  constructor(
    private readonly file: string | null,
    private readonly unreadBytes: number,
  ) {}

  written(state: PullState, bytesWritten: number): void {
    this.pending.push({state, at: bytesWritten})
    let safe: PullState | null = null
    while (this.pending.length > 0 && bytesWritten - this.pending[0]!.at >= this.unreadBytes) safe = this.pending.shift()!.state
    if (safe) this.save(safe)
  }

  flush(): void {
    const newest = this.pending.at(-1)
    this.pending = []
    if (newest) this.save(newest.state)
  }

  private save(state: PullState): void {
    if (this.file !== null) saveState(this.file, state)
  }
}

function checkOwner(loaded: LoadedState | null, options: PullOptions): void {
  if (!loaded || (loaded.state.base_url === options.baseUrl && loaded.state.customer_id === options.customerId)) return
  throw new ValidationError(
    `state file ${options.stateFile} belongs to customer ${loaded.state.customer_id} at ${loaded.state.base_url}`,
    'state',
    'give each customer and base URL its own --state file, or leave --state out',
  )
}

/**
 * A saved position the server refuses (its master key changed, or the file was edited) as a
 * state-file error with the way out, rather than a complaint about a cursor the user never passed.
 */
function savedPositionRefused(error: unknown, cursor: string | null, stateFile: string | null): ValidationError | null {
  if (cursor === null || stateFile === null || !(error instanceof ApiRequestError) || error.param !== 'cursor') return null
  return new ValidationError(
    `the position saved in ${stateFile} is not accepted by the server: ${error.message}`,
    'state',
    'start over with --reset (add --since to start at a time)',
  )
}

/** Waits, ending early (without an error) when the run is interrupted. */
async function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  await delay(ms, undefined, {signal}).catch(() => undefined)
}
