import {setTimeout as delay} from 'node:timers/promises'

import type {Lead} from '../leads/lead-types.js'
import {ValidationError} from '../shared/errors.js'
import type {LeadsApiClient, RateLimitState} from './api-client.js'
import type {LeadWriter} from './lead-writer.js'
import {loadState, type PullState, saveState} from './pull-state.js'

export interface PullProgress {
  pages: number
  leads: number
  rateLimit: RateLimitState | null
  /** updated_at of the last lead written: how far the sync has come. */
  position: string | null
  /** True while waiting for the next poll in --follow mode. */
  caughtUp: boolean
}

export interface PullOptions {
  baseUrl: string
  customerId: string
  stateFile: string
  /** Only for a first run: an existing state file wins. */
  since?: string
  pageSize: number
  follow: boolean
  intervalMs: number
  writer: LeadWriter
  signal?: AbortSignal
  /** Called after each page is written and saved; awaited, so a slow view slows the pull, not memory. */
  onProgress?: (progress: PullProgress) => void | Promise<void>
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

export interface PullSummary {
  pages: number
  leads: number
  state: PullState
}

/**
 * Incremental sync: follows next_cursor with sort_by=updated_at&sort_dir=asc, writes each page,
 * and only then saves where it got to, so a run killed at any moment resumes without losing a
 * lead (the page being written when it died comes again: a lead may repeat).
 */
export async function pullLeads(client: LeadsApiClient, options: PullOptions): Promise<PullSummary> {
  const sleep = options.sleep ?? sleepUnlessAborted
  const saved = loadState(options.stateFile)
  if (saved && (saved.base_url !== options.baseUrl || saved.customer_id !== options.customerId)) {
    throw new ValidationError(
      `state file ${options.stateFile} belongs to customer ${saved.customer_id} at ${saved.base_url}`,
      'state',
      'give each customer and base URL its own --state file, or leave --state out',
    )
  }
  let state: PullState = saved ?? {
    base_url: options.baseUrl,
    customer_id: options.customerId,
    cursor: null,
    updated_since: options.since ?? null,
    last_id: null,
    leads_pulled: 0,
    saved_at: new Date().toISOString(),
  }
  const progress: PullProgress = {pages: 0, leads: 0, rateLimit: null, position: state.updated_since, caughtUp: false}

  await options.writer.start()
  while (!options.signal?.aborted) {
    const query: Record<string, string> = {sort_by: 'updated_at', sort_dir: 'asc', limit: String(options.pageSize)}
    if (state.cursor !== null) query['cursor'] = state.cursor
    else if (state.updated_since !== null) query['updated_since'] = state.updated_since
    const {body, rateLimit} = await client.listLeads(query)

    // updated_since is inclusive: leads at that instant up to the last id written came already.
    const fresh = state.cursor === null ? body.leads.filter((lead) => !alreadyWritten(lead, state)) : body.leads
    await options.writer.page(fresh)
    const last: Lead | undefined = body.leads.at(-1)
    state = {
      ...state,
      cursor: body.next_cursor,
      updated_since: last?.updated_at ?? state.updated_since,
      last_id: last?.id ?? state.last_id,
      leads_pulled: state.leads_pulled + fresh.length,
      saved_at: new Date().toISOString(),
    }
    saveState(options.stateFile, state)

    progress.pages += 1
    progress.leads += fresh.length
    progress.rateLimit = rateLimit
    progress.position = state.updated_since
    progress.caughtUp = body.next_cursor === null
    await options.onProgress?.({...progress})

    if (body.next_cursor !== null) continue
    if (!options.follow) break
    await sleep(options.intervalMs, options.signal)
  }
  await options.writer.end()
  return {pages: progress.pages, leads: progress.leads, state}
}

function alreadyWritten(lead: Lead, state: PullState): boolean {
  return state.last_id !== null && lead.updated_at === state.updated_since && lead.id <= state.last_id
}

/** Waits, ending early (without an error) when the run is interrupted. */
async function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  await delay(ms, undefined, {signal}).catch(() => undefined)
}
