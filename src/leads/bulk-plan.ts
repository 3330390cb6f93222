import {ValidationError} from '../shared/errors.js'
import type {LeadInput} from './lead-input.js'
import {mergeLead, newLead} from './lead-merge.js'
import {type MatchEntry, MatchPool} from './lead-matching.js'
import type {LeadRecord} from './lead-types.js'

export const ON_DUPLICATE = ['update', 'skip', 'error'] as const
export type OnDuplicate = (typeof ON_DUPLICATE)[number]

/**
 * A row's result. `createdByRow` (of a merge, a skip or an on_duplicate=error failure) names the
 * earlier row of the same request that creates the lead the row matched: a dry run creates
 * nothing, so its answer must not name that lead's id.
 */
export type RowOutcome =
  | {index: number; status: 'created'; lead: LeadRecord}
  | {index: number; status: 'updated' | 'skipped'; lead: LeadRecord; createdByRow?: number}
  | {index: number; status: 'failed'; error: {message: string; param?: string}; duplicate?: {by: 'email' | 'phone'; createdByRow?: number}}

export interface BulkRow {
  index: number
  input?: LeadInput
  error?: {message: string; param?: string}
}

export interface BulkPlan {
  outcomes: RowOutcome[]
  /** Leads to insert or overwrite, in their final state. */
  writes: LeadRecord[]
}

/**
 * Resolves a bulk request's rows in order, as if each were sent alone: a row matches the oldest
 * lead with its email, else with its phone's last 10 digits, among the existing leads and the
 * leads earlier rows created or changed.
 */
export function planBulk(
  customerId: string,
  rows: BulkRow[],
  existing: MatchEntry[],
  onDuplicate: OnDuplicate,
  defaults: {stageId: string},
  now: number,
): BulkPlan {
  // Age order: existing leads oldest first (as the store returns them), then this request's new ones.
  const pool = new MatchPool(existing)
  const changed = new Set<string>()
  /** The row that creates each lead this request creates. */
  const creators = new Map<string, number>()
  const outcomes: RowOutcome[] = []

  for (const row of rows) {
    if (!row.input) {
      outcomes.push({index: row.index, status: 'failed', error: row.error ?? {message: 'invalid row'}})
      continue
    }
    const input = row.input
    const match = pool.find(input)
    const createdByRow = match ? creators.get(match.lead.id) : undefined
    const creator = createdByRow === undefined ? {} : {createdByRow}
    if (!match) {
      const lead = newLead(customerId, input, {stageId: defaults.stageId, sourceType: 'import'}, now)
      pool.add(lead)
      changed.add(lead.id)
      creators.set(lead.id, row.index)
      outcomes.push({index: row.index, status: 'created', lead})
    } else if (onDuplicate === 'skip') {
      outcomes.push({index: row.index, status: 'skipped', lead: match.lead, ...creator})
    } else if (onDuplicate === 'error') {
      const param = match.by === 'email' ? 'contact_email' : 'contact_phone'
      const error = {message: `matches existing lead ${match.lead.id} by ${match.by}`, param}
      outcomes.push({index: row.index, status: 'failed', error, duplicate: {by: match.by, ...creator}})
    } else {
      const merged = mergeOrError(match.lead, input, now)
      if ('error' in merged) {
        outcomes.push({index: row.index, status: 'failed', error: merged.error})
        continue
      }
      pool.replace(match.position, merged.lead)
      changed.add(merged.lead.id)
      outcomes.push({index: row.index, status: 'updated', lead: merged.lead, ...creator})
    }
  }
  const finalState = new Map(pool.leads().map((lead) => [lead.id, lead]))
  return {outcomes, writes: [...changed].map((id) => finalState.get(id) as LeadRecord)}
}

/** A merge, or the row error that stops it (the merged custom fields would be too large). */
function mergeOrError(existing: LeadRecord, input: LeadInput, now: number): {lead: LeadRecord} | {error: {message: string; param?: string}} {
  try {
    return {lead: mergeLead(existing, input, now)}
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error
    return {error: {message: error.message, ...(error.param ? {param: error.param} : {})}}
  }
}
