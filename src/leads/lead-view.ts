import {isoTime, isoTimeOrNull} from '../shared/clock.js'
import type {Lead} from './lead-types.js'
import type {LeadWithRelations} from './leads-store.js'

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
