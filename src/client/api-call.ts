import {randomUUID} from 'node:crypto'

import {AppError, ValidationError} from '../shared/errors.js'

/** One call of `leads api`: where, as whom, and what to send. */
export interface ApiCall {
  baseUrl: string
  token: string
  customerId: string
  method: string
  /** `/api/…`, with a query string or not. */
  path: string
  /** Query parameters (GET, DELETE) or top-level fields of the JSON body (other methods). */
  fields: ReadonlyArray<readonly [string, unknown]>
  headers: ReadonlyArray<readonly [string, string]>
}

export interface ApiAnswer {
  status: number
  statusText: string
  headers: Headers
  /** The body as sent: JSON text, or whatever else the server said. */
  text: string
  /** The body parsed, when it is JSON. */
  json: unknown
}

/** The headers `leads api -i` shows: the rate-limit state of the key, and when to retry. */
export const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']

const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE'])

/**
 * Sends one authenticated request, as the API's clients do: Bearer token and x-customer-id, an
 * Idempotency-Key on a POST that names none, fields as the query string or a JSON body.
 */
export async function callApi(call: ApiCall): Promise<ApiAnswer> {
  const method = call.method.toUpperCase()
  if (!call.path.startsWith('/')) throw new ValidationError(`the path must start with /, got "${call.path}"`, 'path', 'e.g. /api/agents/crm/leads')
  const url = new URL(call.baseUrl + call.path)
  const headers = new Headers({authorization: `Bearer ${call.token}`, 'x-customer-id': call.customerId, accept: 'application/json'})
  for (const [name, value] of call.headers) headers.set(name, value)
  let body: string | undefined
  if (QUERY_METHODS.has(method)) {
    for (const [name, value] of call.fields) url.searchParams.append(name, String(value))
  } else if (call.fields.length > 0) {
    body = JSON.stringify(jsonBodyOf(call.fields))
    headers.set('content-type', 'application/json')
  }
  if (method === 'POST' && !headers.has('idempotency-key')) headers.set('idempotency-key', randomUUID())
  let response: Response
  try {
    response = await fetch(url, {method, headers, body})
  } catch (error) {
    const cause = (error as {cause?: {code?: string; message?: string}}).cause
    throw new AppError(
      'api_error',
      503,
      `cannot reach ${call.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      'is the daemon running? --base-url, LEADS_BASE_URL or the profile names it',
    )
  }
  const text = await response.text()
  let json: unknown
  try {
    json = text === '' ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  return {status: response.status, statusText: response.statusText, headers: response.headers, text, json}
}

/**
 * `--paginate`: the call, then the same call from each page's `next_cursor`, until there is none
 * (or, for a sync, until `has_more` is false). Stops at the first answer that is not a 2xx.
 */
export async function* paginate(call: ApiCall): AsyncGenerator<ApiAnswer> {
  let fields = call.fields
  for (;;) {
    const answer = await callApi({...call, fields})
    yield answer
    const page = answer.json as {next_cursor?: unknown; has_more?: unknown} | undefined
    if (answer.status >= 300 || typeof page?.next_cursor !== 'string' || page.has_more === false) return
    fields = [...call.fields.filter(([name]) => name !== 'cursor'), ['cursor', page.next_cursor]]
  }
}

/** A `-F key=value` field: true, false, null and numbers as JSON values, anything else a string. */
export function typedField(raw: string): readonly [string, unknown] {
  const [name, value] = splitField(raw)
  if (value === 'true' || value === 'false') return [name, value === 'true']
  if (value === 'null') return [name, null]
  if (value.trim() !== '' && Number.isFinite(Number(value))) return [name, Number(value)]
  return [name, value]
}

/** A `-f key=value` field: the value as a string. */
export function rawField(raw: string): readonly [string, string] {
  return splitField(raw)
}

function splitField(raw: string): [string, string] {
  const at = raw.indexOf('=')
  if (at <= 0) throw new ValidationError(`a field is key=value, got "${raw}"`, 'field')
  return [raw.slice(0, at), raw.slice(at + 1)]
}

type JsonObject = Record<string, unknown>
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The JSON body of the fields, read as gh api reads their names: `key[sub]` sets a key of an
 * object, `key[]` adds to an array, and `key[][sub]` fills the array's last object until it
 * already has `sub`, then starts the next one (so a bulk request's rows can be given field by field).
 */
export function jsonBodyOf(fields: ReadonlyArray<readonly [string, unknown]>): JsonObject {
  const body: JsonObject = {}
  for (const [name, value] of fields) {
    const path = fieldPath(name)
    const appends = path.at(-1) === ''
    const walk = appends ? path.slice(0, -1) : path
    let container = body
    let key = walk[0]!
    for (let at = 1; at < walk.length; at++) {
      const part = walk[at]!
      if (part !== '') {
        if (!isObject(container[key])) container[key] = {}
        container = container[key] as JsonObject
        key = part
        continue
      }
      const next = walk[at + 1]
      if (next === undefined || next === '') throw badFieldName(name)
      if (!Array.isArray(container[key])) container[key] = []
      const list = container[key] as unknown[]
      const last = list.at(-1)
      if (!(isObject(last) && (!(next in last) || (at + 2 < walk.length && isObject(last[next]))))) list.push({})
      container = list.at(-1) as JsonObject
      key = next
      at += 1
    }
    if (!appends) container[key] = value
    else if (Array.isArray(container[key])) (container[key] as unknown[]).push(value)
    else container[key] = [value]
  }
  return body
}

/** `key[sub][]` as its parts: key, sub, '' (an array). */
function fieldPath(name: string): string[] {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(name)
  if (!match) throw badFieldName(name)
  return [match[1]!, ...[...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((part) => part[1]!)]
}

function badFieldName(name: string): ValidationError {
  return new ValidationError(`a field name is key, key[sub] or key[], got "${name}"`, 'field', 'as gh api reads them')
}

/** A `-H 'Name: value'` header. */
export function headerOf(raw: string): readonly [string, string] {
  const at = raw.indexOf(':')
  if (at <= 0) throw new ValidationError(`a header is "Name: value", got "${raw}"`, 'header')
  return [raw.slice(0, at).trim(), raw.slice(at + 1).trim()]
}
