import {LEAD_LINE_SLUG, type LeadLine} from '../customers/customer-types.js'
import {timeOrderedId} from '../shared/time-ordered-id.js'
import type {LeadInput} from './lead-input.js'
import {checkCustomFieldsSize} from './lead-limits.js'
import type {LeadRecord, SourceType} from './lead-types.js'

/** A new lead from a validated input, with the contract's defaults. */
export function newLead(customerId: string, input: LeadInput, defaults: {stageId: string; sourceType: SourceType}, now: number): LeadRecord {
  return {
    // Time-ordered (UUIDv7): new leads append to the primary key instead of splitting pages at random.
    id: timeOrderedId(),
    customerId,
    sourcePlatform: input.sourcePlatform ?? 'direct',
    sourceType: input.sourceType ?? defaults.sourceType,
    status: 'active',
    createdAt: now,
    updatedAt: now,
    contactName: input.contactName ?? null,
    contactPhone: input.contactPhone ?? null,
    contactEmail: input.contactEmail ?? null,
    score: null,
    qualified: null,
    stageId: input.stageId ?? defaults.stageId,
    ownerId: null,
    lastInteractionAt: null,
    interactionCount: 0,
    leadLine: leadLineOf(input.customFields),
    customFields: {...input.customFields},
  }
}

/**
 * An existing lead with the input merged in: given fields overwrite, custom fields merge key by
 * key. Throws ValidationError when the merged custom fields would exceed their size limit.
 */
export function mergeLead(existing: LeadRecord, input: LeadInput, now: number): LeadRecord {
  const customFields = {...existing.customFields, ...input.customFields}
  checkCustomFieldsSize(customFields)
  return {
    ...existing,
    contactName: input.contactName ?? existing.contactName,
    contactPhone: input.contactPhone ?? existing.contactPhone,
    contactEmail: input.contactEmail ?? existing.contactEmail,
    stageId: input.stageId ?? existing.stageId,
    sourcePlatform: input.sourcePlatform ?? existing.sourcePlatform,
    sourceType: input.sourceType ?? existing.sourceType,
    customFields,
    leadLine: leadLineOf(customFields),
    // Never move backwards, even if this writer's clock is behind the one that wrote last.
    updatedAt: Math.max(now, existing.updatedAt + 1),
  }
}

function leadLineOf(customFields: Record<string, unknown>): LeadLine | null {
  const value = customFields[LEAD_LINE_SLUG]
  return value === 'buyer' || value === 'seller' ? value : null
}
