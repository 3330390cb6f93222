import {SORT_FIELDS} from './cursor.js'
import {LEAD_STATUSES, SOURCE_PLATFORMS, SOURCE_TYPES} from './lead-types.js'

const dateTime = {type: 'string', format: 'date-time'} as const
const nullableDateTime = {type: ['string', 'null'], format: 'date-time'} as const
const scalar = {type: ['string', 'number', 'boolean', 'null']} as const

/** The Lead resource as responses carry it (custom_fields only when asked for in lists). */
export const LEAD_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'customer_id',
    'source_platform',
    'source_type',
    'status',
    'created_at',
    'updated_at',
    'contact_name',
    'contact_phone',
    'contact_email',
    'score',
    'qualified',
    'current_stage',
    'owner',
    'last_interaction_at',
    'interaction_count',
  ],
  properties: {
    id: {type: 'string', format: 'uuid'},
    customer_id: {type: 'string', format: 'uuid'},
    source_platform: {type: 'string', enum: [...SOURCE_PLATFORMS]},
    source_type: {type: 'string', enum: [...SOURCE_TYPES]},
    status: {type: 'string', enum: [...LEAD_STATUSES]},
    created_at: dateTime,
    updated_at: dateTime,
    contact_name: {type: ['string', 'null']},
    contact_phone: {type: ['string', 'null']},
    contact_email: {type: ['string', 'null']},
    score: {type: ['integer', 'null']},
    qualified: {type: ['boolean', 'null']},
    current_stage: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'slug', 'name', 'color'],
      properties: {id: {type: 'string'}, slug: {type: 'string'}, name: {type: 'string'}, color: {type: 'string', pattern: '^#[0-9a-fA-F]{6}$'}},
    },
    owner: {
      type: ['object', 'null'],
      additionalProperties: false,
      required: ['id', 'name', 'role_name'],
      properties: {id: {type: 'string'}, name: {type: 'string'}, role_name: {type: 'string'}},
    },
    last_interaction_at: nullableDateTime,
    interaction_count: {type: 'integer', minimum: 0},
    custom_fields: {
      type: 'object',
      additionalProperties: scalar,
      description: 'In lists only with include_custom_fields=true; always in create responses.',
    },
  },
} as const

/** The Lead as create responses carry it: custom_fields is always part of it there. */
export const LEAD_WITH_CUSTOM_FIELDS_SCHEMA = {
  ...LEAD_SCHEMA,
  required: [...LEAD_SCHEMA.required, 'custom_fields'],
} as const

export const LEAD_LIST_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['leads', 'total', 'limit', 'offset', 'next_cursor'],
  properties: {
    leads: {type: 'array', items: {$ref: '#/components/schemas/Lead'}},
    total: {type: 'integer', minimum: 0},
    limit: {type: 'integer', minimum: 1, maximum: 100},
    offset: {type: 'integer', minimum: 0},
    next_cursor: {
      type: ['string', 'null'],
      description: `Opaque; valid only with the sort_by (${SORT_FIELDS.join(', ')}) and sort_dir it was issued under. Never null with sync=true.`,
    },
    has_more: {type: 'boolean', description: 'sync=true only: more changes can be fetched now with next_cursor'},
  },
} as const

export const CREATE_LEAD_RESPONSE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['lead', 'merged', 'unknown_custom_fields'],
  properties: {
    lead: {$ref: '#/components/schemas/LeadWithCustomFields'},
    merged: {type: 'boolean'},
    unknown_custom_fields: {type: 'array', items: {type: 'string'}},
  },
} as const

export const BULK_RESPONSE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['dry_run', 'summary', 'results', 'unknown_custom_fields'],
  properties: {
    dry_run: {type: 'boolean'},
    summary: {
      type: 'object',
      additionalProperties: false,
      required: ['received', 'created', 'updated', 'skipped', 'failed'],
      properties: {
        received: {type: 'integer'},
        created: {type: 'integer'},
        updated: {type: 'integer'},
        skipped: {type: 'integer'},
        failed: {type: 'integer'},
      },
    },
    results: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['index', 'status'],
        properties: {
          index: {type: 'integer', minimum: 0},
          status: {type: 'string', enum: ['created', 'updated', 'skipped', 'failed']},
          lead_id: {type: 'string', format: 'uuid'},
          error: {
            type: 'object',
            additionalProperties: false,
            required: ['message'],
            properties: {message: {type: 'string'}, param: {type: 'string'}},
          },
        },
      },
    },
    unknown_custom_fields: {
      type: 'array',
      description:
        'Each slug the rows name that the customer does not define, with the indexes of the rows that name it, in order of first appearance; a failed row is listed too, so that one pass finds every renamed field.',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['slug', 'rows'],
        properties: {slug: {type: 'string'}, rows: {type: 'array', items: {type: 'integer'}}},
      },
    },
  },
} as const
