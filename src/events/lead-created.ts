import {randomUUID} from 'node:crypto'

import {LEAD_LINE_VALUES} from '../customers/customer-types.js'
import type {LeadWithRelations} from '../leads/lead-rows.js'
import {SOURCE_PLATFORMS, SOURCE_TYPES} from '../leads/lead-types.js'
import {isoTime} from '../shared/clock.js'
import type {StoredEvent} from './events-store.js'

export const LEAD_CREATED = 'lead.created'

/** The `lead` object of a lead.created delivery, as the spec's Events table lists it. */
interface LeadCreatedSnapshot {
  id: string
  contact_name: string | null
  contact_phone: string | null
  contact_email: string | null
  source_platform: string
  source_type: string
  lead_line: string | null
  current_stage: {slug: string; name: string}
  custom_fields: Record<string, unknown>
  created_at: string
  updated_at: string
}

const dateTime = {type: 'string', format: 'date-time'} as const
const nullableText = {type: ['string', 'null']} as const

/**
 * The body of a lead.created delivery as JSON Schema, for the OpenAPI document's `webhooks`: what
 * signedRequest writes, with LeadCreatedSnapshot as its `lead`.
 */
export const LEAD_CREATED_EVENT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['event', 'delivered_at', 'lead'],
  properties: {
    event: {type: 'string', const: LEAD_CREATED},
    delivered_at: {...dateTime, description: "This attempt's time: every attempt has its own, as X-Service-Timestamp."},
    lead: {
      type: 'object',
      additionalProperties: false,
      description: 'The lead as created: the same values as the 201 response of the create.',
      required: [
        'id',
        'contact_name',
        'contact_phone',
        'contact_email',
        'source_platform',
        'source_type',
        'lead_line',
        'current_stage',
        'custom_fields',
        'created_at',
        'updated_at',
      ],
      properties: {
        id: {type: 'string', format: 'uuid'},
        contact_name: nullableText,
        contact_phone: nullableText,
        contact_email: nullableText,
        source_platform: {type: 'string', enum: [...SOURCE_PLATFORMS]},
        source_type: {type: 'string', enum: [...SOURCE_TYPES]},
        lead_line: {type: ['string', 'null'], enum: [...LEAD_LINE_VALUES, null], description: 'The reserved custom field `lead_line`; null when unset.'},
        current_stage: {
          type: 'object',
          additionalProperties: false,
          required: ['slug', 'name'],
          properties: {slug: {type: 'string'}, name: {type: 'string'}},
        },
        custom_fields: {type: 'object', additionalProperties: {type: ['string', 'number', 'boolean', 'null']}},
        created_at: dateTime,
        updated_at: dateTime,
      },
    },
  },
} as const

/** A snapshot of the lead as created: the same values as the 201 response. */
export function leadCreatedSnapshot(lead: LeadWithRelations): LeadCreatedSnapshot {
  return {
    id: lead.id,
    contact_name: lead.contactName,
    contact_phone: lead.contactPhone,
    contact_email: lead.contactEmail,
    source_platform: lead.sourcePlatform,
    source_type: lead.sourceType,
    lead_line: lead.leadLine,
    current_stage: {slug: lead.stage.slug, name: lead.stage.name},
    custom_fields: lead.customFields,
    created_at: isoTime(lead.createdAt),
    updated_at: isoTime(lead.updatedAt),
  }
}

/**
 * A lead.created event with a sample lead, for `leads webhooks test`: the shape a receiver gets,
 * with values that say what it is. Never stored.
 */
export function sampleLeadCreated(customerId: string, now: number): StoredEvent {
  const payload: LeadCreatedSnapshot = {
    id: randomUUID(),
    contact_name: 'Test Lead (sent by leads webhooks test)',
    contact_phone: '+1 555 010 0000',
    contact_email: 'test.lead@example.com',
    source_platform: 'direct',
    source_type: 'manual',
    lead_line: 'buyer',
    current_stage: {slug: 'new', name: 'New'},
    custom_fields: {lead_line: 'buyer'},
    created_at: isoTime(now),
    updated_at: isoTime(now),
  }
  return {id: randomUUID(), customerId, type: LEAD_CREATED, leadId: payload.id, payload, createdAt: now}
}
