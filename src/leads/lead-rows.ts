import type {LeadLine, Owner} from '../customers/customer-types.js'
import type {CustomFields, LeadRecord, LeadStatus, SourcePlatform, SourceType} from './lead-types.js'
import {normalizeEmail, phoneDigits, phoneLast10} from './lead-matching.js'

/** A stored lead with its stage and owner, as the list query returns it. */
export interface LeadWithRelations extends LeadRecord {
  stage: {id: string; slug: string; name: string; color: string}
  owner: Owner | null
}

/** A lead's owner as the API shows it. */
export type LeadOwner = NonNullable<LeadWithRelations['owner']>

/** The stages by id, each with only what a lead shows of it. */
export function stagesById(stages: ReadonlyArray<LeadWithRelations['stage']>): Map<string, LeadWithRelations['stage']> {
  return new Map(stages.map((stage) => [stage.id, {id: stage.id, slug: stage.slug, name: stage.name, color: stage.color}]))
}

/** The lead with its stage and owner, from those already loaded. */
export function withStageAndOwner(
  lead: LeadRecord,
  stages: ReadonlyMap<string, LeadWithRelations['stage']>,
  owners: ReadonlyMap<string, LeadOwner>,
): LeadWithRelations {
  return {...lead, stage: stages.get(lead.stageId) as LeadWithRelations['stage'], owner: lead.ownerId === null ? null : (owners.get(lead.ownerId) ?? null)}
}

/** change_seq of a lead written but not yet numbered into the change feed. */
export const PENDING = 0

export interface LeadRow {
  id: string
  customer_id: string
  source_platform: string
  source_type: string
  status: string
  created_at: number | string
  updated_at: number | string
  contact_name: string | null
  contact_phone: string | null
  contact_email: string | null
  email_normalized: string | null
  phone_digits: string | null
  phone_last10: string | null
  score: number | null
  qualified: number | boolean | null
  stage_id: string
  owner_id: string | null
  last_interaction_at: number | string | null
  interaction_count: number
  lead_line: string | null
  custom_fields: string
  change_seq: number | string
}

/** The row a lead is stored as (also what the push bench's floor inserts). */
export function leadToRow(lead: LeadRecord): LeadRow {
  return {
    id: lead.id,
    customer_id: lead.customerId,
    source_platform: lead.sourcePlatform,
    source_type: lead.sourceType,
    status: lead.status,
    created_at: lead.createdAt,
    updated_at: lead.updatedAt,
    contact_name: lead.contactName,
    contact_phone: lead.contactPhone,
    contact_email: lead.contactEmail,
    email_normalized: normalizeEmail(lead.contactEmail),
    phone_digits: phoneDigits(lead.contactPhone),
    phone_last10: phoneLast10(lead.contactPhone),
    score: lead.score,
    qualified: lead.qualified,
    stage_id: lead.stageId,
    owner_id: lead.ownerId,
    last_interaction_at: lead.lastInteractionAt,
    interaction_count: lead.interactionCount,
    lead_line: lead.leadLine,
    custom_fields: JSON.stringify(lead.customFields),
    // Every write puts the lead back in the change feed's pending set (see sequencePending).
    change_seq: PENDING,
  }
}

export function rowToLeadRecord(row: LeadRow): LeadRecord {
  return {
    id: row.id,
    customerId: row.customer_id,
    sourcePlatform: row.source_platform as SourcePlatform,
    sourceType: row.source_type as SourceType,
    status: row.status as LeadStatus,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    contactName: row.contact_name,
    contactPhone: row.contact_phone,
    contactEmail: row.contact_email,
    score: row.score === null ? null : Number(row.score),
    qualified: row.qualified === null ? null : Boolean(row.qualified),
    stageId: row.stage_id,
    ownerId: row.owner_id,
    lastInteractionAt: row.last_interaction_at === null ? null : Number(row.last_interaction_at),
    interactionCount: Number(row.interaction_count),
    leadLine: row.lead_line as LeadLine | null,
    customFields: JSON.parse(row.custom_fields) as CustomFields,
  }
}
