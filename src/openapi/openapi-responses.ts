import {IDEMPOTENCY_KEY_SCHEMA} from '../idempotency/idempotency-service.js'
import {ENDPOINT_SCOPES, type Endpoint} from '../keys/scopes.js'

type Json = Record<string, unknown>

export const ref = (name: string) => ({$ref: `#/components/schemas/${name}`})
export const json = (schema: Json) => ({'application/json': {schema}})

const integerHeader = (description: string, required: boolean) => ({description, required, schema: {type: 'integer', minimum: 0}})

/**
 * The RateLimit headers every response of the API carries. A 500 may come from before the rate
 * limiter counted the request (the key lookup's database), and a 501 from Node's parser with a
 * limiter that cannot answer, so there they are not promised.
 */
function rateHeaders(required: boolean): Json {
  return {
    'RateLimit-Limit': integerHeader('Limit of the reported window (the one with the least remaining).', required),
    'RateLimit-Remaining': integerHeader('Requests left in that window.', required),
    'RateLimit-Reset': integerHeader('Seconds until that window resets.', required),
  }
}
/** Set before anything can fail; a 501 is written by the parser's handler, without one. */
const REQUEST_ID = {
  'X-Request-Id': {description: "Request id: the caller's X-Request-Id when sane, otherwise minted.", required: true, schema: {type: 'string'}},
}

export const RATE_HEADERS = {...rateHeaders(true), ...REQUEST_ID}
const REPLAYED = {
  'Idempotent-Replayed': {
    description: '`true` when this is the response stored under the Idempotency-Key, replayed byte for byte.',
    required: false,
    schema: {type: 'string', enum: ['true']},
  },
}
/** The headers of a write's stored responses (its 2xx and its 400s). */
export const WRITE_HEADERS = {...RATE_HEADERS, ...REPLAYED}

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid query, body or header (`param` names it); also a cursor replayed under another sort.',
  401: 'Missing or invalid token, or missing or malformed `x-customer-id`.',
  403: 'The key lacks the scope, or is locked to another customer.',
  404: 'No such webhook for this customer.',
  405: 'A method this path does not serve (TRACE and OPTIONS included); `Allow` lists the ones it does. HEAD is served wherever GET is.',
  409: 'Idempotency-Key reused with another body, or its first request still in progress; only the latter carries Retry-After: send the same request again after it.',
  413: 'Body over 1 MiB (10 MiB on bulk).',
  415: 'Body is not application/json.',
  429: 'Rate limit exceeded; wait Retry-After seconds.',
  500: 'Unexpected failure; quote X-Request-Id to the operator.',
  503: 'The database is unavailable (unreachable, a lost connection, a cluster node without quorum); wait Retry-After seconds and retry. A write answered 503 may have been stored only when its connection broke at the commit: retry it with the same Idempotency-Key, which replays it if so.',
  501: 'A method HTTP does not have (refused by the HTTP parser); the connection is closed.',
}

const RETRY_AFTER = {description: 'Seconds to wait before retrying.', required: true, schema: {type: 'integer', minimum: 0}}
/** A 409 for a key whose first request is still running says when to send it again; a 409 for another body has none. */
const IN_PROGRESS_RETRY_AFTER = {
  description: 'Present only when the first request with this Idempotency-Key is still in progress: seconds to wait before sending the same request again.',
  required: false,
  schema: {type: 'integer', minimum: 0},
}

function headersOf(status: number, write: boolean): Json {
  if (status === 500) return {...rateHeaders(false), ...REQUEST_ID}
  if (status === 503) return {...rateHeaders(false), ...REQUEST_ID, 'Retry-After': RETRY_AFTER}
  if (status === 501) return rateHeaders(false)
  if (status === 429) return {...RATE_HEADERS, 'Retry-After': RETRY_AFTER}
  if (status === 409) return {...RATE_HEADERS, 'Retry-After': IN_PROGRESS_RETRY_AFTER}
  if (status === 405)
    return {...RATE_HEADERS, Allow: {description: 'The methods the path serves, e.g. `HEAD, GET, POST`.', required: true, schema: {type: 'string'}}}
  return status === 400 && write ? WRITE_HEADERS : RATE_HEADERS
}

/**
 * The error responses of an operation, and 405 and 501, which every path answers; 503 wherever a
 * 500 can come (both come from the database when it fails). `texts`
 * replaces the usual description of a status where it means something else here; `write` marks
 * a write under an Idempotency-Key, whose 400s are stored and replayed.
 */
export function errors(statuses: number[], texts: Record<number, string> = {}, write = false): Json {
  return Object.fromEntries(
    [...statuses, ...(statuses.includes(500) ? [503] : []), 405, 501]
      .sort((a, b) => a - b)
      .map((status) => [String(status), {description: texts[status] ?? ERROR_TEXT[status], headers: headersOf(status, write), content: json(ref('Error'))}]),
  )
}

/** An API operation: its scope from the scope table, stated first in its description (`about` follows). */
export function operation(endpoint: Endpoint, summary: string, spec: Json, about?: string): Json {
  const scope = ENDPOINT_SCOPES[endpoint]
  return {
    summary,
    description: `Requires scope \`${scope}\`.${about === undefined ? '' : ` ${about}`}`,
    'x-required-scope': scope,
    security: [{bearerAuth: [], customerId: []}],
    ...spec,
  }
}

export const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Client-generated, unique per request: 1 to 255 printable ASCII characters, no spaces (an empty header is a 400, not "no key"). Scoped per customer and endpoint, kept 24 h.',
  schema: IDEMPOTENCY_KEY_SCHEMA,
}
export const WEBHOOK_ID = {name: 'id', in: 'path', required: true, schema: {type: 'string', pattern: '^wh_[0-9a-f]+$'}}
