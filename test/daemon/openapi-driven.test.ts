import {Ajv, type ValidateFunction} from 'ajv'
import addFormatsModule from 'ajv-formats'
import {expect} from 'chai'
import fc from 'fast-check'
import {generateSync, type JsonSchema} from 'json-schema-faker'

import {SCOPES, type Scope} from '../../src/keys/scopes.js'
import type {CustomFields} from '../../src/leads/lead-types.js'
import {openApiDocument} from '../../src/openapi/openapi-document.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {type Json, rawRequest, resolveRefs, unknownMethod} from '../helpers/openapi.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/**
 * The API document drives the daemon: every operation it lists is called with requests generated
 * from its own schemas (json-schema-faker, seeded), valid ones and near-misses (fast-check picks
 * the mutation), and as every caller the document names a status for (no or a bad token, another
 * customer, a key without the scope, a spent rate limit, a method the path does not serve, ...).
 * Every answer must have a status the document lists for the operation and the kind of request,
 * a body valid against the document for that status, and the headers it marks required; no 5xx
 * but the 501 HTTP's parser gives an unknown method. Over the run every documented status of
 * every operation must be seen, but for the few in UNREACHABLE. A fixed seed in CI, printed in
 * the suite's title; LEADS_FUZZ_SEED and LEADS_FUZZ_RUNS for other and longer runs.
 */
const SEED = Number(process.env['LEADS_FUZZ_SEED'] ?? 20261126)
const RUNS = Number(process.env['LEADS_FUZZ_RUNS'] ?? 5)

/** Documented statuses no request of this suite can cause, keyed `status` or `operationId status`. */
const UNREACHABLE: Record<string, string> = {
  // The answer this suite exists to rule out; openapi.test.ts provokes it with the database closed under the daemon.
  '500': 'an unexpected failure',
  // A store that does not answer would fail every other request here; openapi.test.ts checks it on a daemon of its own.
  'ready 503': 'a backing store down',
  // The database unavailable; openapi.test.ts provokes it with connections refused under the daemon.
  '503': 'the database unavailable',
}

/**
 * Where the document's prose adds a rule its schemas cannot state, so a request the schemas accept
 * may still be a 400: the rule, as the document words it.
 */
const PROSE_RULES: Record<string, string> = {
  listLeads:
    'a query parameter not listed, or given twice, is a 400; a cursor is next_cursor issued under the same sort_by and sort_dir; sync takes only cursor, limit, include_custom_fields and updated_since',
  createLead: "stage_slug names one of the customer's stages; contact_phone has at least one digit and at most 32",
  recoverWebhookDeliveries: 'since is at most 7 days ago and not in the future',
}

/**
 * Arrays of a request body whose items fail alone, as BulkRequest says ("a row that breaks it fails
 * alone ... the answer is still 200"): the request is judged without them, and each such item must
 * come back `failed` in `results`.
 */
const ROWS: Record<string, string> = {bulkCreateLeads: 'leads'}

/** The body limits the 413 response states: 1 MiB, 10 MiB on bulk. */
const BODY_LIMIT: Record<string, number> = {bulkCreateLeads: 10 * 1024 * 1024}
const DEFAULT_BODY_LIMIT = 1024 * 1024

/** The error type the specification names for a status. */
const ERROR_TYPE: Record<number, string> = {401: 'authentication_error', 403: 'authorization_error', 429: 'rate_limit_error'}

const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE']

/**
 * Every keyless request (no token, a guess, a probe's wrong method) counts in its client address's
 * budget of 100 a minute: each request comes from the next address of 127.0.1.0/24, as many
 * clients would, but for the one address this suite throttles on purpose.
 */
const clientAddress = (() => {
  let next = 0
  return () => `127.0.1.${(next++ % 254) + 1}`
})()
const THROTTLED_ADDRESS = '127.0.0.9'

interface Operation {
  id: string
  method: string
  path: string
  query: Json[]
  idempotencyKey: Json | null
  body: Json | null
  bodyRequired: boolean
  responses: Record<string, Json>
  scope: Scope | null
}

/** The operations of the document, with every reference inlined. */
function operationsOf(document: Json): Operation[] {
  return Object.entries(document['paths'] as Json).flatMap(([path, methods]) =>
    Object.entries(methods as Json).map(([method, raw]) => {
      const op = resolveRefs(raw, document) as Json
      const parameters = (op['parameters'] ?? []) as Json[]
      return {
        id: op['operationId'] as string,
        method: method.toUpperCase(),
        path,
        query: parameters.filter((p) => p['in'] === 'query'),
        idempotencyKey: parameters.find((p) => p['in'] === 'header' && p['name'] === 'Idempotency-Key') ?? null,
        body: (op['requestBody']?.content['application/json'].schema as Json | undefined) ?? null,
        bodyRequired: op['requestBody']?.required === true,
        responses: op['responses'] as Record<string, Json>,
        scope: (op['x-required-scope'] as Scope | undefined) ?? null,
      }
    }),
  )
}

const successOf = (op: Operation) =>
  Object.keys(op.responses)
    .map(Number)
    .filter((status) => status < 300)
const servesWebhookId = (op: Operation) => op.path.includes('{id}')
const isApi = (op: Operation) => op.scope !== null

/** A request as sent. */
interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

/** A change that makes a near-miss of a valid request: where in it, and what is done. */
interface Mutation {
  at: number
  change: {drop: true} | {replace: unknown} | {long: number} | {extra: string} | {raw: string} | {query: string} | {header: string}
}

// Values one step off what a schema takes: the wrong type, past a length or range, a control character, no enum member.
const nearValue = fc.oneof(
  fc.constantFrom<unknown>(null, true, 0, -1, 1.5, 1e21, '', ' ', 'zz', [], {}, [1], {a: 1}),
  fc.constantFrom('\u0000', '\u0007', '\u001b', '\ud800', '\u000b').map((c) => `a${c}b`),
)
const nearQuery = fc.constantFrom('', '-1', '0', '101', '10001', '1.5', 'abc', 'yes', 'x'.repeat(1025), 'a\u0001b', '2026-02-30T25:61:61Z', '%')
const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  change: fc.oneof(
    fc.constant({drop: true as const}),
    nearValue.map((replace) => ({replace})),
    // A string just past a limit of the document (contact_phone, search, contact_name, description, a custom field, url).
    fc.constantFrom(65, 201, 256, 501, 2001, 2049).map((long) => ({long})),
    fc.constantFrom('nickname', 'Contact_Name', 'extra').map((extra) => ({extra})),
    fc.constantFrom('{', '{"a":', 'nul', '[1,]', "{'a':1}", '').map((raw) => ({raw})),
    nearQuery.map((query) => ({query})),
    fc.constantFrom('', 'has space', 'x'.repeat(256), 'caf\u00e9', 'tab\tkey').map((header) => ({header})),
  ),
})

/** The JSON paths of every value inside `value`, the root first. */
function pathsOf(value: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  const inner =
    value !== null && typeof value === 'object'
      ? Object.entries(value).flatMap(([key, item]) => pathsOf(item, [...at, Array.isArray(value) ? Number(key) : key]))
      : []
  return [at, ...inner]
}

function parentOf(root: Json, at: Array<string | number>): Json | undefined {
  return at.slice(0, -1).reduce<Json | undefined>((node, key) => (node === undefined ? undefined : (node[key as string] as Json | undefined)), root)
}

/** A request of a kind: what goes out, and the statuses the document allows for it. */
interface Planned {
  sent: Sent
  expected: number[]
  /** The client address it comes from, when not the next of clientAddress(). */
  from?: string
  /** Whether the document accepts each item that fails alone, in order (see ROWS). */
  rows?: boolean[] | null
  /** A second request after `sent` (a replay, the request a spent limit refuses), and what it may get. */
  then?: {sent: Sent; expected: number[]}
}

interface Kind {
  name: string
  runs: number
  applies(op: Operation): boolean
}

const KINDS: Kind[] = [
  {name: 'valid', runs: RUNS * 3, applies: () => true},
  {name: 'near-miss', runs: RUNS * 3, applies: (op) => op.body !== null || op.query.length > 0 || op.idempotencyKey !== null},
  {name: 'no token', runs: 1, applies: isApi},
  {name: 'unknown token', runs: RUNS, applies: isApi},
  {name: 'no customer', runs: 1, applies: isApi},
  {name: 'malformed customer', runs: RUNS, applies: isApi},
  {name: 'another customer', runs: 1, applies: isApi},
  {name: 'key without the scope', runs: 1, applies: isApi},
  {name: 'spent rate limit', runs: 1, applies: isApi},
  {name: 'address over its keyless budget', runs: 1, applies: (op) => '429' in op.responses},
  {name: 'not JSON', runs: RUNS, applies: (op) => op.body !== null},
  {name: 'over the size limit', runs: 1, applies: (op) => op.body !== null},
  {name: 'key reused with another body', runs: RUNS, applies: (op) => op.idempotencyKey !== null},
  {name: 'no such webhook', runs: RUNS, applies: servesWebhookId},
  {name: 'webhook the operator disabled', runs: RUNS, applies: servesWebhookId},
  {name: 'method the path does not serve', runs: RUNS, applies: () => true},
  {name: 'method HTTP does not have', runs: 1, applies: () => true},
]

forEachBackend((backend) => {
  describe(`the API document drives the daemon (seed ${SEED}, LEADS_FUZZ_SEED to change)`, function () {
    const document = openApiDocument()
    const operations = operationsOf(document)
    const seen = new Map<string, Map<number, number>>(operations.map((op) => [op.id, new Map()]))
    const ajv = addFormats(new Ajv({strict: false, allErrors: true}))
    // Query values arrive as text: "5" is the integer 5, as the daemon reads it.
    const queryAjv = addFormats(new Ajv({strict: false, allErrors: true, coerceTypes: true}))
    const validators = new Map<string, ValidateFunction>()
    const compiled = (key: string, schema: Json, coerce = false) => {
      if (!validators.has(key)) validators.set(key, (coerce ? queryAjv : ajv).compile(schema))
      return validators.get(key)!
    }
    let daemon: TestDaemon
    let receiver: Receiver
    let tenant: TestTenant
    let other: TestTenant
    let limited: TestTenant
    const scopeless = new Map<Scope, string>()
    let sequence = 0

    before(async function () {
      this.timeout(60_000)
      receiver = await new Receiver().start()
      daemon = await startTestDaemon(backend, {limitsCacheTtlMs: 0}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      other = await newTenant(daemon.services)
      // Leads to list, custom fields and all, before any case creates one.
      await insertLeads(
        daemon.db,
        ([{note: 'first', budget: 5}, {note: null, lead_line: 'buyer'}, {}] as CustomFields[]).map((customFields, index) =>
          leadRecord(tenant, {customFields, leadLine: index === 1 ? 'buyer' : null, contactEmail: `seed${index}@example.com`}),
        ),
      )
      limited = await newTenant(daemon.services)
      await daemon.services.rateLimits.set({type: 'customer', id: limited.customer.id}, {perMinute: 1, perHour: 1, bulkPerMinute: 1})
      for (const scope of SCOPES) {
        const rest = SCOPES.filter((each) => each !== scope)
        scopeless.set(scope, (await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: rest})).token)
      }
    })
    after(async function () {
      await daemon?.stop()
      await receiver?.stop()
    })

    it('serves the document it is driven by', async function () {
      expect((await daemon.request('/openapi.json')).body).to.deep.equal(JSON.parse(JSON.stringify(document)))
    })

    /** Values from a schema of the document, the same for the same seed; webhook URLs lead to the receiver, dates to the last days. */
    const generate = (schema: Json, seed: number, optionalsProbability = 0.5): unknown => {
      const now = Date.now()
      return generateSync(schema as JsonSchema, {
        seed,
        optionalsProbability,
        maxItems: 3,
        formats: {
          uri: (random) => `${receiver.url}/${random.int(0, 1e6).toString(36)}`,
          'date-time': (random) => new Date(now - random.int(60, 6 * 86_400) * 1000).toISOString(),
        },
      })
    }

    /** The schema of an operation's query: each parameter a property. */
    const querySchema = (op: Operation): Json => ({
      type: 'object',
      properties: Object.fromEntries(op.query.map((p) => [p['name'], p['schema']])),
      required: op.query.filter((p) => p['required']).map((p) => p['name']),
    })

    const credentials = (token = tenant.token, customerId = tenant.customer.id): Record<string, string> => ({
      authorization: `Bearer ${token}`,
      'x-customer-id': customerId,
    })

    /** The parts of a request the document's schemas describe, as generated or mutated. */
    interface Parts {
      query: Json | null
      body: unknown
      rawBody?: string
      idempotencyKey?: string
    }

    /**
     * Fits generated values to the tenant where a schema can only say "a string" or "a UUID": a stage
     * slug or id names one of its stages. Without it nearly every lead would be refused for its stage
     * and nearly every list would be empty.
     */
    const fit = <T>(value: T, seed: number): T => {
      const stage = tenant.stages[seed % tenant.stages.length]!
      const fitOne = (item: unknown) => {
        if (item === null || typeof item !== 'object') return
        if (typeof (item as Json)['stage_slug'] === 'string') (item as Json)['stage_slug'] = stage.slug
        if (typeof (item as Json)['stageId'] === 'string') (item as Json)['stageId'] = stage.id
      }
      fitOne(value)
      if (value !== null && typeof value === 'object' && Array.isArray((value as Json)['leads'])) (value as Json)['leads'].forEach(fitOne)
      return value
    }

    const generatedParts = (op: Operation, seed: number): Parts => {
      // Few parameters at once, as every filter narrows the list and most generated ones match nothing.
      const parts: Parts = {query: op.query.length > 0 ? fit(generate(querySchema(op), seed, 0.2) as Json, seed) : null, body: null}
      if (op.body) parts.body = fit(generate(op.body, seed), seed)
      if (op.idempotencyKey && seed % 2 === 0) parts.idempotencyKey = `${++sequence}.${generate(op.idempotencyKey['schema'], seed) as string}`.slice(0, 255)
      return parts
    }

    /** The schema a body is judged by: with the items that fail alone taken out. */
    const bodySchema = (op: Operation): Json => {
      const rows = ROWS[op.id]
      if (!rows || !op.body) return op.body!
      return {...op.body, properties: {...op.body['properties'], [rows]: {...op.body['properties'][rows], items: true}}}
    }

    /** Whether the document's schemas accept the parts. Malformed JSON they never do; no body at all only where it is optional. */
    const documented = (op: Operation, parts: Parts): boolean => {
      if (parts.rawBody !== undefined && (parts.rawBody !== '' || op.bodyRequired)) return false
      if (op.body && parts.rawBody === undefined && !compiled(`${op.id} body`, bodySchema(op))(parts.body)) return false
      if (parts.query && !compiled(`${op.id} query`, querySchema(op), true)(structuredClone(parts.query))) return false
      if (op.idempotencyKey && parts.idempotencyKey !== undefined && !compiled(`${op.id} key`, op.idempotencyKey['schema'])(parts.idempotencyKey)) {
        return false
      }
      return true
    }

    /** For each item that fails alone, whether the document accepts it; null where the operation has none. */
    const rowsOf = (op: Operation, parts: Parts): boolean[] | null => {
      const rows = ROWS[op.id]
      if (!rows || parts.rawBody !== undefined) return null
      const items: unknown = (parts.body as Json | null)?.[rows]
      if (!Array.isArray(items)) return null
      const validate = compiled(`${op.id} row`, op.body!['properties'][rows]['items'])
      return items.map((item) => validate(item))
    }

    const mutate = (op: Operation, parts: Parts, {at, change: asked}: Mutation): Parts => {
      const next: Parts = structuredClone(parts)
      const fits = (change: Mutation['change']) =>
        'header' in change ? op.idempotencyKey !== null : 'query' in change ? op.query.length > 0 : op.body !== null
      // A change the operation has no place for becomes one it has.
      const change: Mutation['change'] = fits(asked) ? asked : op.body ? {drop: true} : op.query.length > 0 ? {query: 'abc'} : {header: ''}
      if ('header' in change) return {...next, idempotencyKey: change.header}
      if ('query' in change) {
        const names = [...op.query.map((p) => p['name'] as string), 'colour']
        return {...next, query: {...next.query, [names[at % names.length]!]: change.query}}
      }
      if ('raw' in change) return {...next, rawBody: change.raw}
      const paths = pathsOf(next.body)
      const path = paths[at % paths.length]!
      const key = path.at(-1)
      const parent = parentOf({root: next.body}, ['root', ...path])
      if ('extra' in change) {
        const target = (path.length === 0 ? next.body : parent?.[key as string]) as Json
        if (target !== null && typeof target === 'object' && !Array.isArray(target)) target[change.extra] = 'x'
        else if (next.body !== null && typeof next.body === 'object') (next.body as Json)[change.extra] = 'x'
        return next
      }
      const replacement = 'long' in change ? 'x'.repeat(change.long) : 'replace' in change ? change.replace : undefined
      if (path.length === 0) return {...next, body: 'drop' in change ? {} : replacement}
      if ('drop' in change) {
        if (Array.isArray(parent)) parent.splice(key as number, 1)
        else delete parent![key as string]
      } else parent![key as string] = replacement
      return next
    }

    const pathOf = (op: Operation, parts: Parts, webhookId: string): string => {
      const path = op.path.replace('{id}', webhookId)
      if (!parts.query) return path
      const search = new URLSearchParams(Object.entries(parts.query).map(([name, value]): [string, string] => [name, String(value)])).toString()
      return search === '' ? path : `${path}?${search}`
    }

    const sentOf = (op: Operation, parts: Parts, webhookId: string, headers: Record<string, string> = isApi(op) ? credentials() : {}): Sent => {
      const sent: Sent = {method: op.method, path: pathOf(op, parts, webhookId), headers: {...headers}}
      if (parts.idempotencyKey !== undefined) sent.headers['idempotency-key'] = parts.idempotencyKey
      if (op.body) {
        sent.headers['content-type'] = 'application/json'
        sent.body = parts.rawBody ?? JSON.stringify(parts.body)
      }
      return sent
    }

    /** What the document allows for a request from the tenant: success, or a 400 where the schemas or the prose refuse it. */
    const allowed = (op: Operation, parts: Parts): number[] => {
      if (!documented(op, parts)) return [400]
      return PROSE_RULES[op.id] ? [...successOf(op), 400] : successOf(op)
    }

    /** A webhook of the tenant for one case, leading to the receiver; `disabled` as the service operator disables one. */
    const webhookFor = async (disabled = false): Promise<string> => {
      const {webhook} = await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})
      if (disabled) await daemon.services.webhooks.setActive(webhook.id, false)
      return webhook.id
    }
    const absentWebhookId = (seed: number) => generate({type: 'string', pattern: '^wh_[0-9a-f]{24}$'}, seed) as string

    const plan = async (op: Operation, kind: string, seed: number, change: Mutation, extra: number): Promise<Planned> => {
      const parts = generatedParts(op, seed)
      // Every webhook case has one of the tenant's webhooks to act on, and to list.
      const webhookId = op.path.includes('/lead-webhooks') ? await webhookFor() : ''
      const as = (headers: Record<string, string>) => sentOf(op, parts, webhookId, headers)
      switch (kind) {
        case 'valid':
          return {sent: sentOf(op, parts, webhookId), expected: allowed(op, parts), rows: rowsOf(op, parts)}
        case 'near-miss': {
          const missed = mutate(op, parts, change)
          return {sent: sentOf(op, missed, webhookId), expected: allowed(op, missed), rows: rowsOf(op, missed)}
        }
        case 'no token':
          return {sent: as({'x-customer-id': tenant.customer.id}), expected: [401]}
        case 'unknown token':
          return {sent: as(credentials(`svc_${seed.toString(16).padStart(8, '0').repeat(8)}`)), expected: [401]}
        case 'no customer':
          return {sent: as({authorization: `Bearer ${tenant.token}`}), expected: [401]}
        case 'malformed customer':
          return {
            sent: as(credentials(tenant.token, ['', 'not-a-uuid', tenant.customer.id.toUpperCase().slice(1), `${tenant.customer.id}x`][seed % 4]!)),
            expected: [401],
          }
        case 'another customer':
          return {sent: as(credentials(tenant.token, other.customer.id)), expected: [403]}
        case 'key without the scope':
          return {sent: as(credentials(scopeless.get(op.scope!)!)), expected: [403]}
        case 'spent rate limit': {
          const sent = sentOf(op, parts, absentWebhookId(seed), credentials(limited.token, limited.customer.id))
          return {sent, expected: Object.keys(op.responses).map(Number), then: {sent, expected: [429]}}
        }
        case 'address over its keyless budget': {
          await throttle()
          const sent = isApi(op) ? sentOf(op, parts, webhookId) : {method: 'DELETE', path: op.path, headers: {}}
          return {sent, expected: [429], from: THROTTLED_ADDRESS}
        }
        case 'not JSON': {
          const type = ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/csv'][seed % 5]!
          const sent = sentOf(op, parts, webhookId)
          return {sent: {...sent, headers: {...sent.headers, 'content-type': type}}, expected: [415]}
        }
        case 'over the size limit': {
          const sent = sentOf(op, parts, webhookId)
          const limit = BODY_LIMIT[op.id] ?? DEFAULT_BODY_LIMIT
          return {sent: {...sent, body: JSON.stringify({padding: 'x'.repeat(limit)})}, expected: [413]}
        }
        case 'key reused with another body': {
          const key = `${++sequence}.${generate(op.idempotencyKey!['schema'], seed) as string}`.slice(0, 255)
          const first = sentOf(op, {...parts, idempotencyKey: key}, webhookId)
          const changed = generatedParts(op, seed + 1 + (extra % 1000))
          const second = sentOf(op, {...changed, idempotencyKey: key}, webhookId)
          if (second.body === first.body) second.body = JSON.stringify(op.body ? fit(generate(op.body, seed + 7919), seed) : null)
          return {sent: first, expected: allowed(op, parts), then: {sent: second, expected: second.body === first.body ? allowed(op, parts) : [409]}}
        }
        case 'no such webhook':
          return {sent: sentOf(op, parts, absentWebhookId(seed)), expected: documented(op, parts) ? [404] : [400, 404]}
        case 'webhook the operator disabled': {
          const disabled = await webhookFor(true)
          if (op.id === 'deleteWebhook') return {sent: sentOf(op, parts, disabled), expected: successOf(op)}
          const body = op.id === 'updateWebhook' ? {...(parts.body as Json), is_active: true} : parts.body
          const asked = {...parts, body}
          return {sent: sentOf(op, asked, disabled), expected: documented(op, asked) ? [409] : [400]}
        }
        default:
          throw new Error(`no plan for ${kind}`)
      }
    }

    const send = (sent: Sent, from = clientAddress()): Promise<TestResponse> => rawRequest(daemon.url + sent.path, sent.method, sent.headers, sent.body, from)

    /** Spends the keyless budget of THROTTLED_ADDRESS, unless it is spent already. */
    const throttle = async () => {
      for (let request = 0; request <= 100; request++) {
        if ((await rawRequest(`${daemon.url}/healthz`, 'TRACE', {}, undefined, THROTTLED_ADDRESS)).status === 429) return
      }
      throw new Error(`${THROTTLED_ADDRESS} was never throttled`)
    }

    const describeCase = (sent: Sent, response: TestResponse) =>
      `${sent.method} ${sent.path} ${JSON.stringify(sent.headers)} ${(sent.body ?? '').slice(0, 400)}\n  -> ${response.status} ${response.text.slice(0, 400)}`

    /** Checks an answer against the document and the statuses the case allows, and counts its status. */
    const check = (op: Operation, sent: Sent, response: TestResponse, expected: number[]) => {
      const where = describeCase(sent, response)
      const documentedResponse = op.responses[String(response.status)]
      expect(documentedResponse, `${op.id}: status ${response.status} is not in the document\n${where}`).to.not.equal(undefined)
      seen.get(op.id)!.set(response.status, (seen.get(op.id)!.get(response.status) ?? 0) + 1)
      const prose = PROSE_RULES[op.id] ? ` (and its prose: ${PROSE_RULES[op.id]})` : ''
      expect(expected, `${op.id}: ${response.status} where the document${prose} says ${expected.join(' or ')}\n${where}`).to.include(response.status)
      const schema = documentedResponse!['content']?.['application/json']?.schema as Json | undefined
      if (schema && sent.method !== 'HEAD') {
        const validate = compiled(`${op.id} ${response.status}`, schema)
        expect(validate(response.body), `${op.id} ${response.status} body: ${ajv.errorsText(validate.errors)}\n${where}`).to.equal(true)
      }
      for (const [name, header] of Object.entries((documentedResponse!['headers'] ?? {}) as Json)) {
        const value = response.headers.get(name)
        if (value === null) {
          expect(header['required'], `${op.id} ${response.status}: required header ${name} missing\n${where}`).to.not.equal(true)
          continue
        }
        const validate = compiled(`header ${JSON.stringify(header['schema'])}`, header['schema'])
        const typed = header['schema']['type'] === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value
        expect(validate(typed), `${op.id} ${response.status} header ${name}: ${value}\n${where}`).to.equal(true)
      }
      if (response.status < 300) {
        // A query parameter with a default that the answer echoes (limit, offset) is the one sent, or that default.
        const query = new URL(sent.path, daemon.url).searchParams
        for (const parameter of op.query.filter((p) => p['schema']['default'] !== undefined && response.body?.[p['name']] !== undefined)) {
          const name = parameter['name'] as string
          const given = query.get(name)
          const expected = given === null ? parameter['schema']['default'] : parameter['schema']['type'] === 'integer' ? Number(given) : given
          expect(response.body[name], `${op.id}: ${name} as applied\n${where}`).to.equal(expected)
        }
      }
      if (response.status >= 400) {
        expect(response.body?.error?.code, `${op.id}: error code\n${where}`).to.equal(response.status)
        if (ERROR_TYPE[response.status]) expect(response.body.error.type, `${op.id}: error type\n${where}`).to.equal(ERROR_TYPE[response.status])
      }
      expect(response.status >= 500 && response.status !== 501, `${op.id}: a server error\n${where}`).to.equal(false)
    }

    /** Removes the webhooks a case left, so the tenant stays under its webhook limit. */
    const removeWebhooks = async () => {
      for (const webhook of await daemon.services.webhooks.list(tenant.customer.id)) await daemon.services.webhooks.delete(tenant.customer.id, webhook.id)
    }

    const runKind = async (op: Operation, kind: Kind) => {
      if (kind.name === 'method the path does not serve' || kind.name === 'method HTTP does not have') {
        const served = Object.keys((document['paths'] as Json)[op.path] as Json).map((method) => method.toUpperCase())
        const refused = ALL_METHODS.filter((method) => !served.includes(method))
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...refused), fc.constantFrom('BREW', 'FOO', 'LINK2', 'SPAM'), fc.nat(), async (method, unknown, seed) => {
            const webhookId = servesWebhookId(op) ? absentWebhookId(seed) : ''
            const path = op.path.replace('{id}', webhookId)
            const headers = isApi(op) ? credentials() : {}
            if (kind.name === 'method HTTP does not have') {
              const response = await unknownMethod(daemon.url, path, unknown, clientAddress())
              check(op, {method: unknown, path, headers: {}}, response, [501])
              return
            }
            const response = await rawRequest(daemon.url + path, method, headers, undefined, clientAddress())
            check(op, {method, path, headers}, response, [405])
            const allow = (response.headers.get('allow') ?? '').split(/,\s*/)
            expect(allow, `${op.id}: Allow of ${method} ${path}`).to.include.members(served)
          }),
          {seed: SEED, numRuns: kind.runs, endOnFailure: true, includeErrorInReport: true},
        )
        return
      }
      await fc.assert(
        fc.asyncProperty(fc.integer({min: 1, max: 2 ** 31 - 1}), mutation, fc.nat(), async (seed, change, extra) => {
          try {
            const planned = await plan(op, kind.name, seed, change, extra)
            const first = await send(planned.sent, planned.from)
            check(op, planned.sent, first, planned.expected)
            if (planned.rows && first.status < 300) {
              const statuses = (first.body.results as Json[]).map((result) => result['status'])
              expect(statuses.length, `${op.id}: a result per row\n${describeCase(planned.sent, first)}`).to.equal(planned.rows.length)
              planned.rows.forEach((accepted, index) => {
                if (!accepted)
                  expect(statuses[index], `${op.id}: row ${index}, which the document refuses\n${describeCase(planned.sent, first)}`).to.equal('failed')
              })
            }
            if (planned.then) {
              const second = await send(planned.then.sent)
              check(op, planned.then.sent, second, planned.then.expected)
            }
          } finally {
            if (op.path.includes('/lead-webhooks')) await removeWebhooks()
          }
        }),
        {seed: SEED, numRuns: kind.runs, endOnFailure: true, includeErrorInReport: true},
      )
    }

    for (const op of operations) {
      const kinds = KINDS.filter((kind) => kind.applies(op))
      it(`${op.method} ${op.path} (${op.id}): ${kinds.map((kind) => kind.name).join(', ')}`, async function () {
        this.timeout(60_000)
        for (const kind of kinds) await runKind(op, kind)
      })
    }

    it('reached every documented status of every operation', function () {
      const table = operations.map((op) => `${op.id}: ${[...seen.get(op.id)!].map(([status, count]) => `${status}×${count}`).join(' ')}`).join('\n')
      for (const op of operations) {
        for (const status of Object.keys(op.responses)) {
          if (UNREACHABLE[status] || UNREACHABLE[`${op.id} ${status}`]) continue
          expect(seen.get(op.id)!.has(Number(status)), `${op.id} never answered ${status}; statuses seen:\n${table}`).to.equal(true)
        }
      }
    })
  })
})
