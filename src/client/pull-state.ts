import {createHash} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

import {ValidationError} from '../shared/errors.js'

/** Where a pull resumes: the server's opaque change-feed position after the last page written. */
export interface PullState {
  version: 2
  base_url: string
  customer_id: string
  /** next_cursor of the last page written (a sync=true cursor); null before the first page. */
  cursor: string | null
  leads_pulled: number
  saved_at: string
}

/** A state file as read: version 2, or converted from the timestamp format of earlier versions. */
export interface LoadedState {
  state: PullState
  /** Set for a converted file: the feed starts at this updated_since (its leads may come once more). */
  convertedFrom?: string
}

/** The timestamp-based state earlier versions wrote: a sort cursor, or updated_since plus the last id. */
interface TimestampState {
  base_url: string
  customer_id: string
  updated_since: string | null
  leads_pulled?: number
}

/** The default state file, one per base URL and customer, under the CLI's data directory. */
export function defaultStateFile(dataDir: string, baseUrl: string, customerId: string): string {
  const key = createHash('sha256').update(`${baseUrl}\n${customerId}`).digest('hex').slice(0, 16)
  return path.join(dataDir, 'pull-state', `${key}.json`)
}

export function loadState(file: string): LoadedState | null {
  refuseDirectory(file)
  if (!fs.existsSync(file)) return null
  let parsed: Partial<PullState> & Partial<TimestampState>
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof parsed
  } catch {
    throw unreadable(file)
  }
  if (typeof parsed.base_url !== 'string' || typeof parsed.customer_id !== 'string') throw unreadable(file)
  if (parsed.version === 2) return {state: parsed as PullState}
  // Earlier versions kept a time; the change feed starts there (inclusive), so nothing is missed.
  const since = typeof parsed.updated_since === 'string' ? parsed.updated_since : undefined
  return {
    state: {
      version: 2,
      base_url: parsed.base_url,
      customer_id: parsed.customer_id,
      cursor: null,
      leads_pulled: parsed.leads_pulled ?? 0,
      saved_at: new Date().toISOString(),
    },
    ...(since ? {convertedFrom: since} : {}),
  }
}

/** Forgets the saved position (--reset): the next run starts over. */
export function resetState(file: string): void {
  refuseDirectory(file)
  fs.rmSync(file, {force: true})
}

/** Writes the state atomically (temp file, then rename): a run killed mid-write leaves the old state whole. */
export function saveState(file: string, state: PullState): void {
  fs.mkdirSync(path.dirname(file), {recursive: true})
  const temporary = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temporary, JSON.stringify(state, null, 2) + '\n', {mode: 0o600})
  fs.renameSync(temporary, file)
}

function unreadable(file: string): ValidationError {
  return new ValidationError(`state file ${file} is not a leads pull state`, 'state', 'start over with --reset (add --since to start at a time)')
}

/** A directory given as --state: reading it failed as an unreadable file, whose hint (--reset) then failed too. */
function refuseDirectory(file: string): void {
  if (!fs.statSync(file, {throwIfNoEntry: false})?.isDirectory()) return
  throw new ValidationError(`state file ${file} is a directory`, 'state', `give --state the path of a file, such as ${path.join(file, 'leads.state.json')}`)
}
