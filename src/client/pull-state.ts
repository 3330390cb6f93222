import {createHash} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

import {ValidationError} from '../shared/errors.js'

/** Where a pull resumes: a cursor mid-way, or after the newest update seen once it caught up. */
export interface PullState {
  base_url: string
  customer_id: string
  /** next_cursor of the last page written; null once a run reached the end. */
  cursor: string | null
  /** updated_at of the last lead written; the next run asks for updated_since it when there is no cursor. */
  updated_since: string | null
  /** id of the last lead written, so leads at exactly updated_since already written are not written again. */
  last_id: string | null
  leads_pulled: number
  saved_at: string
}

/** The default state file, one per base URL and customer, under the CLI's data directory. */
export function defaultStateFile(dataDir: string, baseUrl: string, customerId: string): string {
  const key = createHash('sha256').update(`${baseUrl}\n${customerId}`).digest('hex').slice(0, 16)
  return path.join(dataDir, 'pull-state', `${key}.json`)
}

export function loadState(file: string): PullState | null {
  if (!fs.existsSync(file)) return null
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as PullState
  } catch {
    throw new ValidationError(`state file ${file} is not valid JSON`, 'state', 'delete it to start over with --since')
  }
}

/** Writes the state atomically (temp file, then rename): a run killed mid-write leaves the old state whole. */
export function saveState(file: string, state: PullState): void {
  fs.mkdirSync(path.dirname(file), {recursive: true})
  const temporary = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temporary, JSON.stringify(state, null, 2) + '\n')
  fs.renameSync(temporary, file)
}
