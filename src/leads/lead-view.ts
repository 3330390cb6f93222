import {isoTime, isoTimeOrNull} from '../shared/clock.js'
import type {RowOutcome} from './bulk-plan.js'
import type {Lead} from './lead-types.js'
import type {LeadWithRelations} from './lead-rows.js'
import type {BulkResult, CreateResult} from './write-types.js'

/** The API's Lead for a stored lead; custom_fields only when asked for. */
export function toApiLead(lead: LeadWithRelations, includeCustomFields: boolean): Lead {
  const view: Lead = {
    id: lead.id,
    customer_id: lead.customerId,
    source_platform: lead.sourcePlatform,
    source_type: lead.sourceType,
    status: lead.status,
    created_at: isoTime(lead.createdAt),
    updated_at: isoTime(lead.updatedAt),
    contact_name: lead.contactName,
    contact_phone: lead.contactPhone,
    contact_email: lead.contactEmail,
    score: lead.score,
    qualified: lead.qualified,
    current_stage: lead.stage,
    owner: lead.owner,
    last_interaction_at: isoTimeOrNull(lead.lastInteractionAt),
    interaction_count: lead.interactionCount,
  }
  if (includeCustomFields) view.custom_fields = lead.customFields
  return view
}

/** Body of a 201 from POST /leads. */
export function createResponse(result: CreateResult): {lead: Lead; merged: boolean; unknown_custom_fields: string[]} {
  return {lead: toApiLead(result.lead, true), merged: result.merged, unknown_custom_fields: result.unknownCustomFields}
}

export interface BulkResponse {
  dry_run: boolean
  summary: {received: number; created: number; updated: number; skipped: number; failed: number}
  results: Array<{index: number; status: RowOutcome['status']; lead_id?: string; error?: {message: string; param?: string}}>
  unknown_custom_fields: Array<{slug: string; rows: number[]}>
}

/**
 * Body of a 200 from POST /leads/bulk. A dry run names no id for a lead it would create, neither
 * on the row that creates it nor on the later rows that match it: that id will never exist.
 */
export function bulkResponse(result: BulkResult): BulkResponse {
  const summary = {received: result.outcomes.length, created: 0, updated: 0, skipped: 0, failed: 0}
  const results = result.outcomes.map((outcome) => {
    summary[outcome.status] += 1
    if (outcome.status === 'failed') return {index: outcome.index, status: outcome.status, error: rowError(outcome, result.dryRun)}
    const wouldBeCreated = outcome.status === 'created' || outcome.createdByRow !== undefined
    if (wouldBeCreated && result.dryRun) return {index: outcome.index, status: outcome.status}
    return {index: outcome.index, status: outcome.status, lead_id: outcome.lead.id}
  })
  return {dry_run: result.dryRun, summary, results, unknown_custom_fields: result.unknownCustomFields}
}

/** A failed row's error; in a dry run a duplicate of a lead an earlier row would create names that row. */
function rowError(outcome: Extract<RowOutcome, {status: 'failed'}>, dryRun: boolean): {message: string; param?: string} {
  const createdByRow = outcome.duplicate?.createdByRow
  if (!dryRun || createdByRow === undefined) return outcome.error
  return {...outcome.error, message: `matches the lead row ${createdByRow} would create by ${outcome.duplicate!.by}`}
}
