import {isUtf8} from 'node:buffer'
import {unescape as unescapeQuery} from 'node:querystring'

import type {LeadLine} from '../customers/customer-types.js'
import {LEAD_LINE_VALUES} from '../customers/customer-types.js'
import {compileOnFirstUse, queryAjv, toValidationError} from '../shared/ajv.js'
import {firstMillisecondAtOrAfter} from '../shared/clock.js'
import {ValidationError} from '../shared/errors.js'
import {LINE_PATTERN, textProblem} from '../shared/text.js'
import {SORT_DIRECTIONS, SORT_FIELDS, type SortDirection, type SortField} from './cursor.js'
import {LEAD_STATUSES, type LeadStatus} from './lead-types.js'

const LIST_LIMIT_MAX = 100
const LIST_LIMIT_DEFAULT = 20
/**
 * Any offset the spec allows (>= 0) that a JavaScript number holds exactly. A page at offset n
 * reads n index entries first, so a deep page costs its depth; one slower than the statement time
 * limit is refused with the way forward (cursor, which costs the same at any depth).
 */
const LIST_OFFSET_MAX = Number.MAX_SAFE_INTEGER

/** Query parameters of GET /leads: the one source for validation and the API document. */
export const LIST_QUERY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: {type: 'string', enum: [...LEAD_STATUSES]},
    stageId: {type: 'string', format: 'uuid'},
    search: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      pattern: LINE_PATTERN,
      description:
        'No control characters (none in any query parameter). Every word of the term must begin a word of the name or of the email before the @ (case and accents ignored), or begin the email when it has an @; a term of digits and phone punctuation matches the beginning of the phone number or of its last 10 digits, formatting ignored, and a term of more than 10 digits the leads whose last 10 digits are its own. Never the middle of a word.',
    },
    created_since: {type: 'string', format: 'date-time'},
    updated_since: {type: 'string', format: 'date-time'},
    sort_by: {type: 'string', enum: [...SORT_FIELDS], default: 'updated_at'},
    sort_dir: {type: 'string', enum: [...SORT_DIRECTIONS], default: 'asc'},
    lead_line: {type: 'string', enum: [...LEAD_LINE_VALUES]},
    include_custom_fields: {type: 'boolean', default: false},
    cursor: {type: 'string', minLength: 1, maxLength: 1024, pattern: LINE_PATTERN},
    limit: {type: 'integer', minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT},
    offset: {
      type: 'integer',
      minimum: 0,
      maximum: LIST_OFFSET_MAX,
      default: 0,
      description:
        "Offset paging is kept for compatibility; cursor (each page's next_cursor) is preferred: an offset page costs its depth, a cursor page the same at any depth.",
    },
    sync: {
      type: 'boolean',
      default: false,
      description:
        'Extension: page the change feed instead of a sorted list. Leads come in commit order, each change once; next_cursor is never null, so the last one is where the next sync resumes; has_more tells whether to fetch again now. Takes only cursor, limit, include_custom_fields and, to start, updated_since.',
    },
  },
} as const

/** The parameters sync=true accepts besides itself: the change feed has its own order and no filters. */
const SYNC_PARAMS = new Set(['sync', 'cursor', 'limit', 'include_custom_fields', 'updated_since'])

const RULES: Record<string, string> = {
  status: `must be one of ${LEAD_STATUSES.join(', ')}`,
  stageId: 'must be a UUID',
  search: 'must be 1 to 200 characters',
  created_since: 'must be an RFC 3339 date-time (date, time to the second, zone), like 2026-01-31T00:00:00Z or 2026-01-31T00:00:00.000+02:00',
  updated_since: 'must be an RFC 3339 date-time (date, time to the second, zone), like 2026-01-31T00:00:00Z or 2026-01-31T00:00:00.000+02:00',
  sort_by: `must be one of ${SORT_FIELDS.join(', ')}`,
  sort_dir: `must be one of ${SORT_DIRECTIONS.join(', ')}`,
  lead_line: `must be one of ${LEAD_LINE_VALUES.join(', ')}`,
  include_custom_fields: 'must be true or false',
  cursor: 'must be next_cursor from an earlier response',
  limit: `must be an integer from 1 to ${LIST_LIMIT_MAX}`,
  offset: `must be an integer from 0 to ${LIST_OFFSET_MAX}; cursor (each page's next_cursor) pages at any depth`,
  sync: 'must be true or false',
}

export interface ListQuery {
  status?: LeadStatus
  stageId?: string
  search?: string
  createdSince?: number
  updatedSince?: number
  sortBy: SortField
  sortDir: SortDirection
  leadLine?: LeadLine
  includeCustomFields: boolean
  cursor?: string
  limit: number
  offset: number
  /** Page the change feed (see LIST_QUERY_SCHEMA.sync). */
  sync: boolean
}

const INTEGER_PARAMS = new Set(['limit', 'offset'])
const DATE_TIME_PARAMS = new Set(['created_since', 'updated_since'])
/** A date-time whose `+hh:mm` offset was sent unencoded: form decoding made the + a space. */
const OFFSET_PLUS_AS_SPACE = /[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)? \d{2}:\d{2}$/
const validate = compileOnFirstUse(queryAjv, LIST_QUERY_SCHEMA)

const PERCENT_ESCAPE = /%[\dA-Fa-f]{2}/g

/** The bytes a query string component stands for: each `%hh` one byte, the rest as UTF-8. */
function escapedBytes(text: string): Buffer {
  const chunks: Buffer[] = []
  let from = 0
  for (const escape of text.matchAll(PERCENT_ESCAPE)) {
    chunks.push(Buffer.from(text.slice(from, escape.index), 'utf8'), Buffer.of(Number.parseInt(escape[0].slice(1), 16)))
    from = escape.index + 3
  }
  chunks.push(Buffer.from(text.slice(from), 'utf8'))
  return Buffer.concat(chunks)
}

/**
 * Refuses a query string whose percent-escapes are not UTF-8 (a Latin-1 client's `%E9` for é).
 * The HTTP layer decodes such bytes to U+FFFD, so `search=%E9mile` would look for "\uFFFDmile"
 * and silently find nothing; a body with such bytes is refused the same way. A `%` that starts no
 * escape stays a plain character, as the HTTP layer reads it.
 */
export function checkQueryEncoding(querystring: string): void {
  if (!querystring.includes('%')) return
  for (const pair of querystring.split('&')) {
    const raw = pair.replaceAll('+', ' ')
    const at = raw.indexOf('=')
    const rawName = at === -1 ? raw : raw.slice(0, at)
    if (isUtf8(escapedBytes(raw))) continue
    const name = unescapeQuery(rawName)
    throw new ValidationError(`query parameter "${name}" is not UTF-8: percent-encode its text as UTF-8 (é is %C3%A9)`, name)
  }
}

/**
 * Validates raw query parameters (as the HTTP layer parsed them) into a typed list query; the raw
 * query string, when given, is checked to be UTF-8 first.
 */
export function parseListQuery(raw: Record<string, string | string[] | undefined>, querystring?: string): ListQuery {
  if (querystring !== undefined) checkQueryEncoding(querystring)
  // No prototype: `?__proto__=x` must become a parameter the schema rejects, not this object's prototype.
  const params: Record<string, unknown> = Object.create(null) as Record<string, unknown>
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) throw new ValidationError(`query parameter "${name}" was given more than once`, name)
    if (value === undefined) continue
    const problem = textProblem(value, 'line')
    if (problem) throw new ValidationError(`query parameter "${name}" ${problem}`, name)
    if (DATE_TIME_PARAMS.has(name) && OFFSET_PLUS_AS_SPACE.test(value)) {
      throw new ValidationError(
        `query parameter "${name}" has a space where its offset's + should be: a query string reads + as a space, so send it as %2B (2026-01-01T00:00:00%2B02:00)`,
        name,
      )
    }
    // ajv would coerce "1e3" or " 5" to numbers; integers here are plain digits.
    if (INTEGER_PARAMS.has(name) && !/^\d+$/.test(value)) {
      throw new ValidationError(`query parameter "${name}" ${RULES[name]}`, name)
    }
    params[name] = name === 'search' ? value.trim() : value
  }
  const given = Object.keys(params)
  if (!validate(params)) throw toValidationError(validate.errors?.[0], (param) => RULES[param], 'query parameter')

  const query = params as unknown as ValidatedParams
  const foreign = query.sync ? given.find((name) => !SYNC_PARAMS.has(name)) : undefined
  if (foreign !== undefined) {
    throw new ValidationError(
      `query parameter "${foreign}" cannot be used with sync=true; the change feed takes only cursor, limit, include_custom_fields and updated_since`,
      foreign,
    )
  }
  if (query.cursor !== undefined && query.offset !== 0) {
    throw new ValidationError('use either cursor or offset, not both; cursor is preferred', 'offset')
  }
  return {
    status: query.status,
    stageId: query.stageId?.toLowerCase(),
    search: query.search,
    createdSince: toMs(query.created_since),
    updatedSince: toMs(query.updated_since),
    sortBy: query.sort_by,
    sortDir: query.sort_dir,
    leadLine: query.lead_line,
    includeCustomFields: query.include_custom_fields,
    cursor: query.cursor,
    limit: query.limit,
    offset: query.offset,
    sync: query.sync,
  }
}

/** The parameters as they are once the schema (with its defaults and coercion) accepted them. */
interface ValidatedParams {
  status?: LeadStatus
  stageId?: string
  search?: string
  created_since?: string
  updated_since?: string
  sort_by: SortField
  sort_dir: SortDirection
  lead_line?: LeadLine
  include_custom_fields: boolean
  cursor?: string
  limit: number
  offset: number
  sync: boolean
}

function toMs(value: string | undefined): number | undefined {
  return value === undefined ? undefined : firstMillisecondAtOrAfter(value)
}
