import type {CustomFieldDefinition, Stage} from '../customers/customer-types.js'
import {LEAD_LINE_SLUG, LEAD_LINE_VALUES} from '../customers/customer-types.js'
import {bodyAjv, compileOnFirstUse, toValidationError} from '../shared/ajv.js'
import {ValidationError} from '../shared/errors.js'
import {checkJsonText, LINE_PATTERN, TEXT_PATTERN, TEXT_RULE, textProblem} from '../shared/text.js'
import {type CustomFields, type CustomFieldValue, SOURCE_PLATFORMS, SOURCE_TYPES, type SourcePlatform, type SourceType} from './lead-types.js'
import {checkCustomFieldsSize, LEAD_LIMITS} from './lead-limits.js'
import {phoneDigits} from './lead-matching.js'

/** ajv-formats' `email` (its full mode, which the service applies): `0@com` has no dot in its domain and is refused. */
const EMAIL_PATTERN =
  "^[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$"
/** A contact field that counts as given: a string that is not blank (strings are trimmed, and a blank one is "not given"). */
const givenContact = {type: 'string', pattern: '\\S'} as const

/** Body of POST /leads and of each bulk row: the one source for validation and the API document. */
export const LEAD_INPUT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  description: `At least one of contact_name, contact_phone, contact_email must be given: a string that is not blank. Strings are trimmed before they are checked, and a blank one or null means "not given" (on a merge the stored value is kept). ${TEXT_RULE}`,
  properties: {
    contact_name: {type: ['string', 'null'], maxLength: LEAD_LIMITS.contactName, pattern: TEXT_PATTERN},
    contact_phone: {
      type: ['string', 'null'],
      maxLength: LEAD_LIMITS.contactPhone,
      pattern: TEXT_PATTERN,
      description: `At least one digit and at most ${LEAD_LIMITS.phoneDigits}`,
    },
    contact_email: {
      anyOf: [{type: 'string', format: 'email', pattern: EMAIL_PATTERN, maxLength: LEAD_LIMITS.contactEmail}, {type: 'null'}],
      description:
        'An address as ajv-formats checks `email` (the pattern): the domain needs a dot, so `0@com` is refused although RFC 5321 allows it; no quoted local parts or address literals. Surrounding spaces are trimmed first.',
    },
    stage_slug: {type: ['string', 'null'], maxLength: LEAD_LIMITS.stageSlug, pattern: TEXT_PATTERN},
    custom_fields: {
      type: 'object',
      description: `The customer's custom fields by slug. A field's value is a string of at most ${LEAD_LIMITS.customFieldValue} characters, a number, a boolean or null, of the field's type (else 400 naming custom_fields.<slug>); at most ${LEAD_LIMITS.customFieldsBytes} bytes as JSON per lead, also after a merge. A slug the customer does not define is dropped whatever its value and listed in unknown_custom_fields: a lead is never lost to a renamed field.`,
      propertyNames: {pattern: LINE_PATTERN},
      // Values are checked only for the customer's own fields (checkFieldValue), text by the body's
      // text rule: any value of a slug that is dropped (a string with a control character, 1e400,
      // which parses to Infinity) would otherwise lose the lead.
    },
    source_platform: {anyOf: [{type: 'string', enum: [...SOURCE_PLATFORMS]}, {type: 'null'}]},
    source_type: {anyOf: [{type: 'string', enum: [...SOURCE_TYPES]}, {type: 'null'}]},
  },
  anyOf: [
    {required: ['contact_name'], properties: {contact_name: givenContact}},
    {required: ['contact_phone'], properties: {contact_phone: givenContact}},
    {required: ['contact_email'], properties: {contact_email: givenContact}},
  ],
} as const

const RULES: Record<string, string> = {
  contact_name: `must be a string of at most ${LEAD_LIMITS.contactName} characters`,
  contact_phone: `must be a string of at most ${LEAD_LIMITS.contactPhone} characters`,
  contact_email: `must be an email address of at most ${LEAD_LIMITS.contactEmail} characters`,
  stage_slug: 'must be a stage slug',
  custom_fields: 'must be an object mapping field slugs to values',
  source_platform: `must be one of ${SOURCE_PLATFORMS.join(', ')}`,
  source_type: `must be one of ${SOURCE_TYPES.join(', ')}`,
}

/** A validated lead write. Undefined means "not given": a merge keeps the stored value. */
export interface LeadInput {
  contactName?: string
  contactPhone?: string
  contactEmail?: string
  stageId?: string
  sourcePlatform?: SourcePlatform
  sourceType?: SourceType
  /** Known fields only, type-checked. */
  customFields: CustomFields
  /** Slugs that are not defined for the customer; their values were dropped. */
  unknownCustomFields: string[]
}

/** What validating a lead needs to know about its customer. */
export interface CustomerSetup {
  stages: Stage[]
  fields: Map<string, CustomFieldDefinition>
}

const validate = compileOnFirstUse(bodyAjv, LEAD_INPUT_SCHEMA)
const validateFields = compileOnFirstUse(bodyAjv, {...LEAD_INPUT_SCHEMA, anyOf: undefined})

/**
 * Validates one lead body against the schema and the customer's stages and fields. Strings are
 * trimmed first and empty ones count as not given. Throws ValidationError naming the field.
 */
export function parseLeadInput(raw: unknown, setup: CustomerSetup): LeadInput {
  return completeLeadInput(readLeadDraft(raw), setup)
}

/** A lead body checked for all that does not depend on the customer: its contact (what it is matched on) is final. */
export interface LeadDraft {
  contactName?: string
  contactPhone?: string
  contactEmail?: string
  body: Record<string, unknown>
}

/**
 * The first half of parseLeadInput: the schema and the contact fields. A write reads the
 * customer's stages and fields in its transaction, together with the leads the draft's contact
 * matches, then finishes with completeLeadInput.
 */
export function readLeadDraft(raw: unknown): LeadDraft {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ValidationError('a lead must be a JSON object')
  }
  // The body's own check leaves a bulk row's text to the row, so that a bad row fails alone, and
  // the custom fields' values to completeLeadInput: an unknown field is dropped whatever it holds.
  checkJsonText(withoutCustomFieldValues(raw as Record<string, unknown>))
  const body = trimStrings(raw as Record<string, unknown>)
  if (!validate(body)) {
    // ajv checks the top-level anyOf (the contact rule) before the fields: a field's own error is the better answer.
    const contactRule = validate.errors?.some((error) => error.keyword === 'anyOf' && error.instancePath === '')
    if (!contactRule || !validateFields(body)) {
      throw toValidationError((contactRule ? validateFields : validate).errors?.[0], (param) => RULES[param], 'field')
    }
    throw new ValidationError('give at least one of contact_name, contact_phone, contact_email', 'contact_name')
  }

  const contactName = given(body['contact_name'])
  const contactPhone = given(body['contact_phone'])
  const contactEmail = given(body['contact_email'])
  if (contactPhone !== undefined) checkPhoneDigits(contactPhone)
  return {contactName, contactPhone, contactEmail, body}
}

/** The second half of parseLeadInput: custom fields and stage, checked against the customer's definitions. */
export function completeLeadInput(draft: LeadDraft, setup: CustomerSetup): LeadInput {
  const {body} = draft
  const {customFields, unknownCustomFields} = checkCustomFields((body['custom_fields'] ?? {}) as CustomFields, setup.fields)
  checkCustomFieldsSize(customFields)
  return {
    contactName: draft.contactName,
    contactPhone: draft.contactPhone,
    contactEmail: draft.contactEmail,
    stageId: resolveStage(given(body['stage_slug']), setup.stages),
    sourcePlatform: given(body['source_platform']) as SourcePlatform | undefined,
    sourceType: given(body['source_type']) as SourceType | undefined,
    customFields,
    unknownCustomFields,
  }
}

/** The customer's stages and fields as validation needs them. */
export function customerSetup(stages: Stage[], fields: readonly CustomFieldDefinition[]): CustomerSetup {
  return {stages, fields: new Map(fields.map((field) => [field.slug, field]))}
}

function checkPhoneDigits(phone: string): void {
  const digits = phoneDigits(phone)
  if (digits === null) throw new ValidationError('contact_phone must contain digits', 'contact_phone')
  if (digits.length > LEAD_LIMITS.phoneDigits) {
    throw new ValidationError(`contact_phone may have at most ${LEAD_LIMITS.phoneDigits} digits; it has ${digits.length}`, 'contact_phone')
  }
}

/** The lead with each custom field's value as null: its slugs are checked with the lead, each value with its field. */
function withoutCustomFieldValues(lead: Record<string, unknown>): Record<string, unknown> {
  const values = lead['custom_fields']
  if (values === null || typeof values !== 'object' || Array.isArray(values)) return lead
  return {...lead, custom_fields: Object.fromEntries(Object.keys(values).map((slug) => [slug, null]))}
}

function trimStrings(body: Record<string, unknown>): Record<string, unknown> {
  const trimmed: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(body)) {
    // An empty or blank string means "not given", as null does.
    if (typeof value === 'string') trimmed[name] = value.trim() === '' ? null : value.trim()
    else if (name === 'custom_fields' && value && typeof value === 'object' && !Array.isArray(value)) {
      trimmed[name] = Object.fromEntries(
        Object.entries(value).map(([slug, fieldValue]) => [slug, typeof fieldValue === 'string' ? fieldValue.trim() : fieldValue]),
      )
    } else trimmed[name] = value
  }
  return trimmed
}

function given(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function resolveStage(slug: string | undefined, stages: Stage[]): string | undefined {
  if (slug === undefined) return undefined
  const stage = stages.find((candidate) => candidate.slug === slug)
  if (!stage) {
    throw new ValidationError(`stage_slug "${slug}" is not a stage of this customer; valid: ${stages.map((s) => s.slug).join(', ')}`, 'stage_slug')
  }
  return stage.id
}

function checkCustomFields(values: CustomFields, fields: Map<string, CustomFieldDefinition>): {customFields: CustomFields; unknownCustomFields: string[]} {
  const customFields: CustomFields = {}
  const unknownCustomFields: string[] = []
  for (const [slug, value] of Object.entries(values)) {
    const field = fields.get(slug)
    if (!field) {
      unknownCustomFields.push(slug)
      continue
    }
    checkFieldValue(field, value)
    customFields[slug] = value
  }
  return {customFields, unknownCustomFields}
}

function checkFieldValue(field: CustomFieldDefinition, value: CustomFieldValue): void {
  const param = `custom_fields.${field.slug}`
  if (value === null) return
  if (field.slug === LEAD_LINE_SLUG) {
    if (!(LEAD_LINE_VALUES as readonly unknown[]).includes(value)) {
      throw new ValidationError(`${param} must be ${LEAD_LINE_VALUES.join(', ')} or null`, param)
    }
    return
  }
  if (typeof value !== field.type || (typeof value === 'number' && !Number.isFinite(value))) {
    throw new ValidationError(`${param} must be a ${field.type} or null`, param)
  }
  const problem = typeof value === 'string' ? textProblem(value, 'text') : null
  if (problem) throw new ValidationError(`field "${param}" ${problem}`, param)
  // Characters are code points, as the schema's maxLength counts them (UTF-16 length is an upper bound).
  const characters = typeof value === 'string' && value.length > LEAD_LIMITS.customFieldValue ? [...value].length : 0
  if (characters > LEAD_LIMITS.customFieldValue) {
    throw new ValidationError(`${param} must be at most ${LEAD_LIMITS.customFieldValue} characters; it has ${characters}`, param)
  }
}
