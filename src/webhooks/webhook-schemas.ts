import {TEXT_PATTERN, TEXT_RULE} from '../shared/text.js'
import {EVENT_TYPES} from './webhook-types.js'

/**
 * An https URI without credentials; the scheme in any case (RFC 3986, 3.1: schemes are
 * case-insensitive; the stored form is WHATWG URL's, lowercased). It names no host rule: hosts are checked by resolving them
 * (public addresses only in production), and LEADS_WEBHOOK_ALLOW_HOSTS lets development and tests
 * register loopback hosts and ports a pattern would refuse.
 */
const WEBHOOK_URL = {
  type: 'string',
  format: 'uri',
  pattern: '^[Hh][Tt][Tt][Pp][Ss]://[^/?#@]+(?:[/?#].*)?$',
  minLength: 1,
  maxLength: 2048,
  description:
    'A public https URI (RFC 3986: an internationalised host in its punycode form, other characters percent-encoded), without credentials, at most 2048 characters also once normalised. Surrounding whitespace is trimmed; scheme and host may be in any case and are stored in lower case. Its host must not be, or resolve to, a loopback, private, link-local, unique-local, multicast, unspecified, CGNAT or metadata address; checked again at each delivery.',
} as const

const common = {
  url: WEBHOOK_URL,
  event_types: {type: 'array', minItems: 1, uniqueItems: true, items: {type: 'string', enum: [...EVENT_TYPES]}},
  description: {
    type: ['string', 'null'],
    maxLength: 500,
    pattern: TEXT_PATTERN,
    description: 'Surrounding whitespace is trimmed; a blank string is stored as null.',
  },
  timeout_seconds: {type: 'integer', minimum: 1, maximum: 60},
  retry_attempts: {type: 'integer', minimum: 0, maximum: 10},
} as const

/** Defaults of a new webhook; ajv fills them in (useDefaults). An update has none: a field left out is kept. */
export const WEBHOOK_DEFAULTS = {timeout_seconds: 10, retry_attempts: 5, description: null} as const

/** Body of POST /lead-webhooks. */
export const CREATE_WEBHOOK_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['url', 'event_types'],
  description: TEXT_RULE,
  properties: {
    ...common,
    description: {...common.description, default: WEBHOOK_DEFAULTS.description},
    timeout_seconds: {...common.timeout_seconds, default: WEBHOOK_DEFAULTS.timeout_seconds},
    retry_attempts: {...common.retry_attempts, default: WEBHOOK_DEFAULTS.retry_attempts},
  },
} as const

/** Body of PATCH /lead-webhooks/{id}. */
export const UPDATE_WEBHOOK_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  description: `Fields left out are kept. ${TEXT_RULE}`,
  properties: {...common, is_active: {type: 'boolean'}, rotate_secret: {type: 'boolean'}},
} as const

export const WEBHOOK_RULES: Record<string, string> = {
  url: 'must be a public https:// URI (RFC 3986) of at most 2048 characters, without credentials',
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
