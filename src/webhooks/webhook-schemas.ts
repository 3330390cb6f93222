import {EVENT_TYPES} from './webhook-types.js'

const common = {
  url: {type: 'string', minLength: 1, maxLength: 2048},
  event_types: {type: 'array', minItems: 1, uniqueItems: true, items: {type: 'string', enum: [...EVENT_TYPES]}},
  description: {type: ['string', 'null'], maxLength: 500},
  timeout_seconds: {type: 'integer', minimum: 1, maximum: 60},
  retry_attempts: {type: 'integer', minimum: 0, maximum: 10},
} as const

/** Body of POST /lead-webhooks. */
export const CREATE_WEBHOOK_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['url', 'event_types'],
  properties: common,
} as const

/** Body of PATCH /lead-webhooks/{id}. */
export const UPDATE_WEBHOOK_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {...common, is_active: {type: 'boolean'}, rotate_secret: {type: 'boolean'}},
} as const

export const WEBHOOK_RULES: Record<string, string> = {
  url: 'must be a public https URL of at most 2048 characters',
  event_types: `must be a non-empty array of distinct event types; only ${EVENT_TYPES.join(', ')} is emitted`,
  description: 'must be a string of at most 500 characters or null',
  timeout_seconds: 'must be an integer from 1 to 60',
  retry_attempts: 'must be an integer from 0 to 10',
  is_active: 'must be true or false',
  rotate_secret: 'must be true or false',
}

/** The Webhook resource; the secret is never part of it. */
export const WEBHOOK_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'url', 'event_types', 'is_active', 'timeout_seconds', 'retry_attempts', 'description', 'created_at', 'updated_at'],
  properties: {
    id: {type: 'string', pattern: '^wh_[0-9a-f]+$'},
    url: {type: 'string', format: 'uri'},
    event_types: {type: 'array', items: {type: 'string', enum: [...EVENT_TYPES]}},
    is_active: {type: 'boolean'},
    timeout_seconds: {type: 'integer', minimum: 1, maximum: 60},
    retry_attempts: {type: 'integer', minimum: 0, maximum: 10},
    description: {type: ['string', 'null']},
    created_at: {type: 'string', format: 'date-time'},
    updated_at: {type: 'string', format: 'date-time'},
  },
} as const

export const SIGNING_SECRET_SCHEMA = {type: 'string', pattern: '^svc_whsec_[0-9a-f]{64}$', description: 'Shown at creation and rotation only.'} as const
