import {expect} from 'chai'
import fc from 'fast-check'

import {LEAD_LIMITS} from '../../src/leads/lead-limits.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

/**
 * Generated input against the real daemon (fast-check): values at and past every limit, every
 * Unicode plane, lone surrogates, controls, huge numbers, nested JSON, prototype keys and raw
 * garbage, for every endpoint's body, query and headers. Whatever is sent: never a 500, always the
 * envelope with `code` equal to the status and the RateLimit headers; a 4xx changes no row; a 2xx
 * create reads back as written. A fixed seed in CI; LEADS_FUZZ_SEED and LEADS_FUZZ_RUNS for long
 * local runs. A failing case is shrunk and reported as a curl line.
 */
const SEED = Number(process.env['LEADS_FUZZ_SEED'] ?? 20261123)
const RUNS = Number(process.env['LEADS_FUZZ_RUNS'] ?? 40)

const LEADS = '/api/agents/crm/leads'
const WEBHOOKS = '/api/agents/crm/lead-webhooks'
const ERROR_TYPES = ['authentication_error', 'authorization_error', 'invalid_request_error', 'not_found_error', 'rate_limit_error', 'api_error']

/** A generated request: what is sent, and what `curl` would send for it. */
interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

/**
 * Any code point, lone surrogates included, printable ASCII first (as fast-check's 'binary' unit
 * orders them, which small values favour). Built here because fast-check takes over a second of
 * CPU to build its 'binary' unit, once per process.
 */
const anyCodePoint = fc.integer({min: 0, max: 0x10ffff}).map((index) => String.fromCodePoint(index < 0x5f ? index + 0x20 : index < 0x7f ? index - 0x5f : index))
const anyCodeUnits = (maxLength: number) => fc.string({unit: anyCodePoint, maxLength})

// Strings a probe tries: any code point (astral included), lone surrogates, controls, limits and their neighbours.
const hostileText = fc.oneof(
  fc.string({unit: 'grapheme', maxLength: 40}),
  anyCodeUnits(40),
  fc.string({
    unit: fc.constantFrom('\u0000', '\u0007', '\u001b', '\u007f', '\u009b', '\ud800', '\udfff', '\u202e', '\ufeff', '"', '\\', "'", '%', '_', '*'),
    maxLength: 20,
  }),
  fc.constantFrom(
    ...[LEAD_LIMITS.contactName, LEAD_LIMITS.contactEmail, LEAD_LIMITS.contactPhone, LEAD_LIMITS.customFieldValue]
      .flatMap((limit) => [limit - 1, limit, limit + 1])
      .map((length) => 'x'.repeat(length)),
  ),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'null', 'NaN', '1e309', '-0', '0x10', '2026-02-30T25:61:61Z'),
)
const hostileNumber = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 2 ** 64, 5e-324, -0))
const scalar = fc.oneof(hostileText, hostileNumber, fc.boolean(), fc.constant(null))
const anyJson = fc.oneof(scalar, fc.array(scalar, {maxLength: 4}), fc.dictionary(hostileText, scalar, {maxKeys: 4}), fc.jsonValue({maxDepth: 6}))

/** A lead body: the known fields with any value, sometimes extra or prototype keys. */
const leadBody = fc.record(
  {
    contact_name: anyJson,
    contact_phone: fc.oneof(anyJson, fc.stringMatching(/^\+?[0-9 ().-]{0,40}$/)),
    contact_email: fc.oneof(anyJson, fc.emailAddress()),
    stage_slug: anyJson,
    source_platform: anyJson,
    source_type: anyJson,
    custom_fields: fc.oneof(anyJson, fc.dictionary(hostileText, scalar, {maxKeys: 6})),
    __proto__: anyJson,
    extra: anyJson,
  },
  {requiredKeys: []},
)

/** A lead the schema accepts, its strings drawn from every plane: what a 201 must read back as. */
const validLead = fc.record(
  {
    contact_name: fc.string({unit: 'grapheme', minLength: 1, maxLength: 60}).filter((name) => name.trim() !== ''),
    contact_email: fc.emailAddress().filter((email) => email.length <= LEAD_LIMITS.contactEmail),
    contact_phone: fc.stringMatching(/^\+?[0-9][0-9 ().-]{6,20}[0-9]$/),
    stage_slug: fc.constantFrom('new', 'contacted', 'qualified'),
    source_platform: fc.constantFrom('direct', 'referral', 'zillow', null),
    source_type: fc.constantFrom('form', 'phone_call', 'import', null),
    custom_fields: fc.record(
      {
        budget: fc.oneof(fc.integer(), fc.double({noNaN: true, noDefaultInfinity: true}), fc.constant(null)),
        notes: fc.string({unit: 'grapheme', maxLength: 80}),
        lead_line: fc.constantFrom('buyer', 'seller', null),
      },
      {requiredKeys: []},
    ),
  },
  {requiredKeys: ['contact_name']},
)

/** A body: JSON of a lead-ish shape, any JSON, or bytes that are not JSON at all. */
function body(shape: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.oneof(
    {weight: 4, arbitrary: shape.map((value) => JSON.stringify(value))},
    {weight: 1, arbitrary: anyJson.map((value) => JSON.stringify(value))},
    {weight: 1, arbitrary: anyCodeUnits(60)},
  )
}

/** Headers a client could send besides the key: content types, odd customer ids and Idempotency-Keys. */
const extraHeaders = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=latin1',
    ),
    'idempotency-key': fc.oneof(fc.string({unit: 'grapheme-ascii', minLength: 1, maxLength: 40}), fc.constant('k'.repeat(256))),
  },
  {requiredKeys: ['content-type']},
)

/**
 * Percent-encoding that can say anything a client can send, a lone surrogate included: as the
 * three bytes UTF-8 would give it (invalid UTF-8, which a server must refuse, not trip over).
 */
function percentEncode(text: string): string {
  let encoded = ''
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    const next = text.charCodeAt(i + 1)
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      encoded += encodeURIComponent(text.slice(i, i + 2))
      i++
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      encoded += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('')
    } else {
      encoded += encodeURIComponent(text[i]!)
    }
  }
  return encoded
}

/** A curl line that sends the same request, for the report of a failing case. */
function curl(url: string, sent: Sent): string {
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`
  const headers = Object.entries(sent.headers).map(([name, value]) => `-H ${quote(`${name}: ${value}`)}`)
  return [
    'curl -sS',
    `-X ${sent.method}`,
    ...headers,
    ...(sent.body === undefined ? [] : [`--data-binary ${quote(sent.body)}`]),
    quote(`${url}${sent.path}`),
  ].join(' ')
}

describe('generated input (fast-check)', function () {
  this.timeout(120_000)

  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    let webhookId: string

    /** What a 4xx must leave as it was: every row of the customer's data, by id and update time. */
    async function snapshot(): Promise<string> {
      const db = daemon.db
      const customerId = tenant.customer.id
      const tables = await Promise.all([
        db('leads').where({customer_id: customerId}).orderBy('id').select('id', 'updated_at', 'change_seq'),
        db('events').where({customer_id: customerId}).count({n: '*'}),
        db('deliveries').where({customer_id: customerId}).count({n: '*'}),
        db('webhooks').where({customer_id: customerId}).orderBy('id').select('id', 'updated_at'),
        db('lead_search_words').where({customer_id: customerId}).count({n: '*'}),
        db('lead_counts').where({customer_id: customerId}).sum({n: 'n'}),
      ])
      return JSON.stringify(tables)
    }

    /** Sends, then checks what holds for every answer; returns the answer. */
    async function sendAndCheck(sent: Sent): Promise<TestResponse> {
      const report = `\n  ${curl(daemon.url, {...sent, headers: {authorization: 'Bearer $TOKEN', 'x-customer-id': tenant.customer.id, ...sent.headers}})}`
      const before = await snapshot()
      const response = await daemon.request(sent.path, {
        method: sent.method,
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: sent.headers,
        body: sent.body,
      })
      expect(response.status, `a 5xx for${report}\n  ${response.text}`).to.be.below(500)
      for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
        expect(response.headers.get(header), `${header} missing for${report}`).to.match(/^\d+$/)
      }
      if (response.status >= 400) {
        expect(response.body?.error?.code, `no envelope, or code ≠ status, for${report}\n  ${response.text}`).to.equal(response.status)
        expect(ERROR_TYPES, `an unknown error type for${report}`).to.include(response.body.error.type)
        expect(response.body.error.message).to.be.a('string').and.not.equal('')
        expect(await snapshot(), `a ${response.status} changed rows for${report}`).to.equal(before)
      }
      return response
    }

    before(async function () {
      // Webhook URLs resolve to a public address without asking DNS; no worker, so nothing is ever sent to them.
      daemon = await startTestDaemon(backend, {role: 'api', lookup: async () => [{address: '93.184.216.34', family: 4}]})
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
      await daemon.services.customers.addField(tenant.customer.id, {slug: 'notes', type: 'string'})
      webhookId = (await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://hooks.example.com/leads', event_types: ['lead.created']})).webhook
        .id
    })
    after(async function () {
      // Deleting the webhooks cancels their pending deliveries: no later daemon's sweeper sends them.
      for (const webhook of await daemon.services.webhooks.list(tenant.customer.id)) await daemon.services.webhooks.delete(tenant.customer.id, webhook.id)
      await daemon.stop()
    })

    it('POST /leads: never a 500, the envelope on every refusal, nothing written by a 4xx, a 201 reads back', async function () {
      const statuses = new Map<number, number>()
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            validLead.map((lead) => JSON.stringify(lead)),
            body(leadBody),
          ),
          fc.oneof(fc.constant({'content-type': 'application/json'}), extraHeaders),
          async (payload, headers) => {
            const response = await sendAndCheck({method: 'POST', path: LEADS, headers, body: payload})
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
            if (response.status !== 201) return
            const {lead} = response.body
            const listed = await daemon.request(`${LEADS}?limit=100&include_custom_fields=true&sort_by=updated_at&sort_dir=desc`, {
              token: tenant.token,
              customerId: tenant.customer.id,
            })
            const stored = listed.body.leads.find((candidate: {id: string}) => candidate.id === lead.id)
            expect(stored, `the created lead ${lead.id} is not listed`).to.not.equal(undefined)
            for (const field of ['contact_name', 'contact_phone', 'contact_email', 'source_platform', 'source_type', 'custom_fields', 'current_stage']) {
              expect(stored[field], `${field} reads back differently than the 201 said`).to.deep.equal(lead[field])
            }
          },
        ),
        {seed: SEED, numRuns: RUNS, endOnFailure: false},
      )
      // The generators reach both sides: creates to read back, and refusals.
      expect(statuses.get(201) ?? 0, JSON.stringify([...statuses])).to.be.at.least(RUNS / 10)
      expect(statuses.get(400) ?? 0, JSON.stringify([...statuses])).to.be.at.least(RUNS / 10)
    })

    it('POST /leads/bulk: never a 500, the envelope on every refusal, nothing written by a 4xx', async function () {
      const bulkBody = fc.record({leads: fc.oneof(fc.array(leadBody, {maxLength: 8}), anyJson), dry_run: anyJson, on_duplicate: anyJson}, {requiredKeys: []})
      await fc.assert(
        fc.asyncProperty(body(bulkBody), extraHeaders, async (payload, headers) => {
          const response = await sendAndCheck({method: 'POST', path: `${LEADS}/bulk`, headers, body: payload})
          if (response.status === 200) expect(response.body.results).to.have.length(response.body.summary.received)
        }),
        {seed: SEED, numRuns: RUNS, endOnFailure: false},
      )
    })

    it('GET /leads: never a 500 for any query string', async function () {
      const names = fc.constantFrom(
        'status',
        'stageId',
        'search',
        'created_since',
        'updated_since',
        'sort_by',
        'sort_dir',
        'lead_line',
        'include_custom_fields',
        'cursor',
        'limit',
        'offset',
        'sync',
        'unknown',
        '__proto__',
      )
      const query = fc.array(fc.tuple(fc.oneof(names, hostileText), fc.oneof(hostileText, hostileNumber.map(String))), {maxLength: 5})
      await fc.assert(
        fc.asyncProperty(query, async (pairs) => {
          const search = pairs.map(([name, value]) => `${percentEncode(name)}=${percentEncode(value)}`).join('&')
          const response = await sendAndCheck({method: 'GET', path: `${LEADS}?${search}`, headers: {}})
          if (response.status === 200) expect(response.body.leads).to.be.an('array')
        }),
        {seed: SEED, numRuns: RUNS, endOnFailure: false},
      )
    })

    it('webhooks: never a 500 for any create, update or id', async function () {
      const webhookBody = fc.record(
        {
          url: fc.oneof(
            anyJson,
            fc.webUrl(),
            fc.constantFrom(
              'https://127.0.0.1/',
              'https://[::1]/',
              'https://0x7f.1/',
              'https://2130706433/',
              'http://hooks.example.com/',
              'https://user:pw@hooks.example.com/',
            ),
          ),
          event_types: fc.oneof(anyJson, fc.constant(['lead.created'])),
          description: anyJson,
          timeout_seconds: fc.oneof(anyJson, fc.integer({min: -1, max: 61})),
          retry_attempts: fc.oneof(anyJson, fc.integer({min: -1, max: 11})),
          is_active: anyJson,
          rotate_secret: anyJson,
        },
        {requiredKeys: []},
      )
      const target = fc.oneof(
        fc.constant({method: 'POST', path: WEBHOOKS}),
        fc.constant({method: 'PATCH', path: `${WEBHOOKS}/${webhookId}`}),
        hostileText.map((id) => ({method: 'PATCH', path: `${WEBHOOKS}/${percentEncode(id)}`})),
        hostileText.map((id) => ({method: 'DELETE', path: `${WEBHOOKS}/${percentEncode(`wh_${id}`)}`})),
      )
      await fc.assert(
        fc.asyncProperty(target, body(webhookBody), extraHeaders, async ({method, path}, payload, headers) => {
          const response = await sendAndCheck({method, path, headers, body: method === 'DELETE' ? undefined : payload})
          // A created webhook is removed again, so the customer never reaches its limit of 20.
          if (response.status === 201) await daemon.services.webhooks.delete(tenant.customer.id, response.body.webhook.id)
        }),
        {seed: SEED, numRuns: RUNS, endOnFailure: false},
      )
    })
  })
})
