export interface Customer {
  id: string
  name: string
  createdAt: number
}

export interface Stage {
  id: string
  customerId: string
  slug: string
  name: string
  color: string
  position: number
}

/** Someone on the customer's team whom leads are assigned to, as a lead shows them. */
export interface Owner {
  id: string
  name: string
  role_name: string
}

export const FIELD_TYPES = ['string', 'number', 'boolean'] as const
export type FieldType = (typeof FIELD_TYPES)[number]

export interface CustomFieldDefinition {
  id: string
  customerId: string
  slug: string
  name: string
  type: FieldType
  /** Reserved fields (lead_line) are created with the customer and cannot be removed. */
  reserved: boolean
}

export const LEAD_LINE_SLUG = 'lead_line'
export const LEAD_LINE_VALUES = ['buyer', 'seller'] as const
export type LeadLine = (typeof LEAD_LINE_VALUES)[number]

/** Stages every new customer starts with, in pipeline order. */
export const DEFAULT_STAGES: ReadonlyArray<Pick<Stage, 'slug' | 'name' | 'color'>> = [
  {slug: 'new', name: 'New', color: '#3b82f6'},
  {slug: 'contacted', name: 'Contacted', color: '#8b5cf6'},
  {slug: 'qualified', name: 'Qualified', color: '#10b981'},
  {slug: 'proposal', name: 'Proposal', color: '#f59e0b'},
  {slug: 'closed', name: 'Closed', color: '#6b7280'},
]
