import type {LeadLine} from '../customers/customer-types.js'

export const LEAD_STATUSES = ['active', 'won', 'lost', 'nurture', 'archived'] as const
export type LeadStatus = (typeof LEAD_STATUSES)[number]

export const SOURCE_PLATFORMS = [
  'direct',
  'referral',
  'google_ads',
  'meta_ads',
  'tiktok_ads',
  'linkedin_ads',
  'microsoft_ads',
  'zillow',
  'realtor_com',
  'redfin',
  'homes_com',
  'zapier',
] as const
export type SourcePlatform = (typeof SOURCE_PLATFORMS)[number]

export const SOURCE_TYPES = ['form', 'phone_call', 'email', 'chat', 'sms', 'manual', 'import'] as const
export type SourceType = (typeof SOURCE_TYPES)[number]

export type CustomFieldValue = string | number | boolean | null
export type CustomFields = Record<string, CustomFieldValue>

/** A lead as stored, with times in epoch milliseconds. */
export interface LeadRecord {
  id: string
  customerId: string
  sourcePlatform: SourcePlatform
  sourceType: SourceType
  status: LeadStatus
  createdAt: number
  updatedAt: number
  contactName: string | null
  contactPhone: string | null
  contactEmail: string | null
  score: number | null
  qualified: boolean | null
  stageId: string
  ownerId: string | null
  lastInteractionAt: number | null
  interactionCount: number
  leadLine: LeadLine | null
  customFields: CustomFields
}

/** A lead's state before and after a write: null before for an insert. */
export interface LeadWrite {
  before: LeadRecord | null
  after: LeadRecord
}

/** The Lead resource of the API, exactly as the spec names its fields. */
export interface Lead {
  id: string
  customer_id: string
  source_platform: string
  source_type: string
  status: string
  created_at: string
  updated_at: string
  contact_name: string | null
  contact_phone: string | null
  contact_email: string | null
  score: number | null
  qualified: boolean | null
  current_stage: {id: string; slug: string; name: string; color: string}
  owner: {id: string; name: string; role_name: string} | null
  last_interaction_at: string | null
  interaction_count: number
  custom_fields?: CustomFields
}
