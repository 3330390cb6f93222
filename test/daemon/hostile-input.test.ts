import {gzipSync} from 'node:zlib'

import {expect} from 'chai'

import {LEAD_LIMITS} from '../../src/leads/lead-limits.js'
import {counts, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'
const WEBHOOKS = '/api/agents/crm/lead-webhooks'
const NOTE_FIELDS = Array.from({length: 10}, (_, i) => `note_${i}`)
/** A custom-field value at its length limit that takes two UTF-8 bytes per character. */
const LONG_VALUE = 'é'.repeat(LEAD_LIMITS.customFieldValue)

/**
 * Values the validator used to accept and a database refused (500 on MySQL) or silently stored
 * (SQLite), found by a black-box probe: each is a clear 4xx now, on both backends, and changes nothing.
 */
describe('hostile input', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const send = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
      daemon.request(path, {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json', ...headers},
        body,
      })
    const list = (query: string) => daemon.request(`${CREATE}?${query}`, {token: tenant.token, customerId: tenant.customer.id})
    const expectRefused = async (response: {status: number; body: {error?: {code: number; param?: string}}}, status: number, param?: string) => {
      expect(response.status).to.equal(status)
      expect(response.body.error?.code).to.equal(status)
      if (param !== undefined) expect(response.body.error?.param).to.equal(param)
      expect((await counts(daemon, tenant)).leads).to.equal(0)
    }

    before(async function () {
      daemon = await startTestDaemon(backend, {lookup: async () => [{address: '93.184.216.34', family: 4}]})
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      for (const slug of NOTE_FIELDS) await daemon.services.customers.addField(tenant.customer.id, {slug, type: 'string'})
    })
    after(async function () {
      await daemon.stop()
    })

    describe('values past what the columns hold', function () {
      it('refuses a phone with more digits than leads.phone_digits holds', async function () {
        await expectRefused(await postJson(daemon, tenant, CREATE, {contact_phone: '1'.repeat(33)}), 400, 'contact_phone')
        expect((await postJson(daemon, tenant, CREATE, {contact_phone: '1'.repeat(LEAD_LIMITS.phoneDigits)})).status).to.equal(201)
      })

      it('fails only the bulk row whose phone is too long; the others are stored', async function () {
        const response = await postJson(daemon, tenant, BULK, {leads: [{contact_name: 'A'}, {contact_phone: '9'.repeat(40)}, {contact_name: 'C'}]})
        expect(response.status).to.equal(200)
        expect(response.body.summary).to.include({created: 2, failed: 1})
        expect(response.body.results[1]).to.deep.include({
          status: 'failed',
          error: {message: 'contact_phone may have at most 32 digits; it has 40', param: 'contact_phone'},
        })
        expect((await counts(daemon, tenant)).leads).to.equal(2)
      })

      it('refuses a custom-field string longer than the documented maximum, naming the field', async function () {
        const response = await postJson(daemon, tenant, CREATE, {contact_name: 'Long', custom_fields: {note_0: LONG_VALUE + 'é'}})
        await expectRefused(response, 400, 'custom_fields.note_0')
        expect(response.body.error.message).to.equal(`custom_fields.note_0 must be at most ${LONG_VALUE.length} characters; it has ${LONG_VALUE.length + 1}`)
        await expectRefused(await postJson(daemon, tenant, CREATE, {contact_name: 'Nested', custom_fields: {note_0: {a: 1}}}), 400, 'custom_fields.note_0')
      })

      it('drops a slug the customer does not define whatever its value: a lead is never lost to a renamed field', async function () {
        const custom_fields = {renamed_note: LONG_VALUE + 'é', renamed_tags: ['a', 'b'], renamed_address: {city: 'Lyon'}, note_0: 'kept'}
        const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Renamed Fields', custom_fields})
        expect(created.status, created.text).to.equal(201)
        expect(created.body.lead.custom_fields).to.deep.equal({note_0: 'kept'})
        expect(created.body.unknown_custom_fields).to.deep.equal(['renamed_note', 'renamed_tags', 'renamed_address'])
        const bulk = await postJson(daemon, tenant, BULK, {leads: [{contact_name: 'Renamed In Bulk', custom_fields}]})
        expect(bulk.body.results[0].status).to.equal('created')
        expect((await counts(daemon, tenant)).leads).to.equal(2)
      })

      it('refuses custom fields larger than a lead may hold, also when a merge would make them so', async function () {
        const all = Object.fromEntries(NOTE_FIELDS.map((slug) => [slug, LONG_VALUE]))
        await expectRefused(await postJson(daemon, tenant, CREATE, {contact_name: 'Big', custom_fields: all}), 400, 'custom_fields')

        const firstHalf = Object.fromEntries(NOTE_FIELDS.slice(0, 5).map((slug) => [slug, LONG_VALUE]))
        const secondHalf = Object.fromEntries(NOTE_FIELDS.slice(5).map((slug) => [slug, LONG_VALUE]))
        const created = await postJson(daemon, tenant, CREATE, {contact_email: 'big@example.org', custom_fields: firstHalf})
        expect(created.status).to.equal(201)
        const merged = await postJson(daemon, tenant, CREATE, {contact_email: 'big@example.org', contact_name: 'Changed', custom_fields: secondHalf})
        expect(merged.status).to.equal(400)
        expect(merged.body.error.param).to.equal('custom_fields')
        const bulk = await postJson(daemon, tenant, BULK, {leads: [{contact_email: 'big@example.org', custom_fields: secondHalf}, {contact_name: 'Fine'}]})
        expect(bulk.body.summary).to.include({created: 1, updated: 0, failed: 1})
        expect(bulk.body.results[0].error.param).to.equal('custom_fields')
        const stored = await list('include_custom_fields=true&search=big%40example.org')
        expect(stored.body.leads[0].contact_name).to.equal(null)
        expect(Object.keys(stored.body.leads[0].custom_fields).sort()).to.deep.equal(NOTE_FIELDS.slice(0, 5))
      })

      it('refuses a webhook URL whose normalised form is over 2,048 characters, and port 0', async function () {
        // 2,048 characters as sent; normalising adds the path's "/".
        const long = await postJson(daemon, tenant, WEBHOOKS, {url: `https://${'a.'.repeat(1019)}aa`, event_types: ['lead.created']})
        expect(long.status).to.equal(400)
        expect(long.body.error.message).to.include('once normalised')
        // Not an RFC 3986 URI (the document's `format: uri`): refused before it is normalised.
        const unicode = await postJson(daemon, tenant, WEBHOOKS, {url: `https://hooks.example.com/${'é'.repeat(700)}`, event_types: ['lead.created']})
        expect(unicode.status).to.equal(400)
        expect(unicode.body.error.param).to.equal('url')
        const portZero = await postJson(daemon, tenant, WEBHOOKS, {url: 'https://hooks.example.com:0/x', event_types: ['lead.created']})
        expect(portZero.status).to.equal(400)
        expect(portZero.body.error.param).to.equal('url')
        expect(await daemon.services.webhooks.list(tenant.customer.id)).to.have.length(0)
      })

      it('refuses timestamps JavaScript cannot represent, such as a leap second', async function () {
        for (const param of ['created_since', 'updated_since']) {
          const response = await list(`${param}=2016-12-31T23:59:60Z`)
          expect(response.status).to.equal(400)
          expect(response.body.error.param).to.equal(param)
        }
      })
    })

    describe('identity comparisons', function () {
      it('compares Idempotency-Keys case-sensitively: KEYCASE-1 does not replay KeyCase-1', async function () {
        const first = await postJson(daemon, tenant, CREATE, {contact_name: 'First'}, 'KeyCase-1')
        const second = await postJson(daemon, tenant, CREATE, {contact_name: 'Second'}, 'KEYCASE-1')
        expect(first.status).to.equal(201)
        expect(second.status).to.equal(201)
        expect(second.headers.get('idempotent-replayed')).to.equal(null)
        expect(second.body.lead.id).to.not.equal(first.body.lead.id)
        const replay = await postJson(daemon, tenant, CREATE, {contact_name: 'First'}, 'KeyCase-1')
        expect(replay.headers.get('idempotent-replayed')).to.equal('true')
        expect(replay.body.lead.id).to.equal(first.body.lead.id)
      })

      it('finds a webhook by its exact id only: WH_… in another case is not found', async function () {
        const created = await postJson(daemon, tenant, WEBHOOKS, {url: 'https://hooks.example.com/case', event_types: ['lead.created']})
        const id: string = created.body.webhook.id
        const patch = (webhookId: string) =>
          daemon.request(`${WEBHOOKS}/${webhookId}`, {
            method: 'PATCH',
            token: tenant.token,
            customerId: tenant.customer.id,
            headers: {'content-type': 'application/json'},
            body: '{"description":"x"}',
          })
        expect((await patch(id.toUpperCase())).status).to.equal(404)
        expect((await patch(id)).status).to.equal(200)
      })
    })

    describe('webhook rules under pressure', function () {
      it('keeps the 20-webhook limit under 40 concurrent registrations', async function () {
        const responses = await Promise.all(
          Array.from({length: 40}, (_, i) => postJson(daemon, tenant, WEBHOOKS, {url: `https://hooks.example.com/race-${i}`, event_types: ['lead.created']})),
        )
        expect(responses.filter((r) => r.status === 201)).to.have.length(20)
        expect(responses.filter((r) => r.status === 400)).to.have.length(20)
        expect(await daemon.services.webhooks.list(tenant.customer.id)).to.have.length(20)
      })

      it("keeps an operator's disable until an operator enables the webhook", async function () {
        const created = await postJson(daemon, tenant, WEBHOOKS, {url: 'https://hooks.example.com/held', event_types: ['lead.created']})
        const id: string = created.body.webhook.id
        const patch = (body: unknown) =>
          daemon.request(`${WEBHOOKS}/${id}`, {
            method: 'PATCH',
            token: tenant.token,
            customerId: tenant.customer.id,
            headers: {'content-type': 'application/json'},
            body: JSON.stringify(body),
          })
        await daemon.services.webhooks.setActive(id, false)
        const reenable = await patch({is_active: true})
        expect(reenable.status).to.equal(409)
        expect(reenable.body.error.message).to.include('only the operator can enable it')
        expect((await patch({is_active: false, description: 'still mine'})).status).to.equal(200)
        expect((await patch({is_active: true})).status).to.equal(409)
        expect((await daemon.services.webhooks.getById(id)).isActive).to.equal(false)

        await daemon.services.webhooks.setActive(id, true)
        expect((await patch({is_active: false})).status).to.equal(200)
        const own = await patch({is_active: true})
        expect(own.status).to.equal(200)
        expect(own.body.webhook.is_active).to.equal(true)
      })
    })

    describe('bodies and queries', function () {
      it('answers a corrupt gzip body with 400 and an unknown Content-Encoding with 415 naming it', async function () {
        await expectRefused(await send(CREATE, 'not gzip at all', {'content-encoding': 'gzip'}), 400)
        const unknown = await send(CREATE, '{"contact_name":"x"}', {'content-encoding': 'xyz'})
        await expectRefused(unknown, 415)
        expect(unknown.body.error.message).to.include('"xyz" is not supported')
        expect((await send(CREATE, gzipSync('{"contact_name":"Zipped"}'), {'content-encoding': 'gzip'})).status).to.equal(201)
      })

      it('refuses prototype keys in the query and in the body, naming them', async function () {
        const query = await list('__proto__=x')
        expect(query.status).to.equal(400)
        expect(query.body.error.param).to.equal('__proto__')
        await expectRefused(await send(CREATE, '{"contact_name":"x","__proto__":{"admin":true}}'), 400, '__proto__')
        await expectRefused(await send(CREATE, '{"contact_name":"x","constructor":{"prototype":{"admin":true}}}'), 400, 'constructor')
      })

      it('refuses ill-formed Unicode and control characters, and keeps tabs and line breaks in text', async function () {
        await expectRefused(await send(CREATE, '{"contact_name":"a\\ud800b"}'), 400, 'contact_name')
        await expectRefused(await send(CREATE, '{"contact_name":"\\u0000"}'), 400, 'contact_name')
        await expectRefused(await send(CREATE, '{"contact_name":"x","custom_fields":{"note_0":"bell\\u0007"}}'), 400, 'custom_fields.note_0')
        await expectRefused(await send(BULK, '{"leads":[{"contact_name":"x"}],"on_duplicate":"skip\\u0001"}'), 400, 'on_duplicate')
        const surrogateRow = await send(BULK, '{"leads":[{"contact_name":"x\\udc00"}]}')
        expect(surrogateRow.status).to.equal(200)
        expect(surrogateRow.body.results[0]).to.deep.include({
          status: 'failed',
          error: {message: 'field "contact_name" contains ill-formed Unicode (a lone UTF-16 surrogate)', param: 'contact_name'},
        })
        expect((await counts(daemon, tenant)).leads).to.equal(0)
        const search = await list('search=%00')
        expect(search.status).to.equal(400)
        expect(search.body.error.param).to.equal('search')
        const fine = await send(CREATE, '{"contact_name":"Ada","custom_fields":{"note_0":"line one\\n\\tline two"}}')
        expect(fine.status).to.equal(201)
        expect(fine.body.lead.custom_fields.note_0).to.equal('line one\n\tline two')
      })

      it('refuses a body that is not UTF-8 with 400 instead of storing U+FFFD for its bytes, on every route', async function () {
        // "José" as Latin-1 sends the byte E9; a cut emoji, the first three of its four bytes.
        const latin1 = Buffer.concat([Buffer.from('{"contact_name":"Jos'), Buffer.from([0xe9]), Buffer.from('"}')])
        const cutEmoji = Buffer.concat([Buffer.from('{"leads":[{"contact_name":"'), Buffer.from([0xf0, 0x9f, 0x98]), Buffer.from('"}]}')])
        const hookUrl = Buffer.concat([
          Buffer.from('{"url":"https://hooks.example.com/'),
          Buffer.from([0xff]),
          Buffer.from('","event_types":["lead.created"]}'),
        ])
        const sent: Array<[path: string, body: Uint8Array, headers: Record<string, string>]> = [
          [CREATE, latin1, {}],
          [BULK, cutEmoji, {}],
          [WEBHOOKS, hookUrl, {}],
          [CREATE, gzipSync(latin1), {'content-encoding': 'gzip'}],
        ]
        for (const [path, body, headers] of sent) {
          const response = await send(path, body, headers)
          expect(response.status, `${path}: ${response.text}`).to.equal(400)
          expect(response.body.error).to.deep.equal({
            type: 'invalid_request_error',
            code: 400,
            message: 'Request body is not valid UTF-8; send JSON encoded as UTF-8.',
            param: 'body',
          })
        }
        expect((await counts(daemon, tenant)).leads).to.equal(0)
        expect(await daemon.services.webhooks.list(tenant.customer.id)).to.have.length(0)
        const utf8 = await send(CREATE, Buffer.from('\ufeff{"contact_name":"José 😀"}'))
        expect(utf8.status, utf8.text).to.equal(201)
        expect(utf8.body.lead.contact_name).to.equal('José 😀')
      })

      it('refuses a body nested 100,000 deep with 400 on every route, not a 500 from a stack overflow', async function () {
        const arrays = '['.repeat(100_000) + ']'.repeat(100_000)
        const objects = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)
        const bodies: Array<[path: string, body: string]> = [
          [CREATE, `{"contact_name":"Deep","custom_fields":{"note_0":${arrays}}}`],
          [CREATE, objects],
          [BULK, `{"leads":[{"contact_name":"Fine"},{"contact_name":"Deep","custom_fields":{"note_0":${objects}}}]}`],
          [WEBHOOKS, `{"url":"https://hooks.example.com/deep","event_types":["lead.created"],"description":${arrays}}`],
        ]
        for (const [path, body] of bodies) {
          expect(Buffer.byteLength(body)).to.be.below(1024 * 1024)
          for (const headers of [{}, {'idempotency-key': `deep-${path.length}-${body.length}`}] as Array<Record<string, string>>) {
            const response = await send(path, body, headers)
            expect(response.status, `${path}: ${response.text}`).to.equal(400)
            expect(response.body.error).to.include({type: 'invalid_request_error', param: 'body'})
            expect(response.body.error.message).to.include('more than 32 levels deep')
          }
        }
        expect((await counts(daemon, tenant)).leads).to.equal(0)
        expect(await daemon.services.webhooks.list(tenant.customer.id)).to.have.length(0)
        const bulk = await postJson(daemon, tenant, BULK, {leads: [{contact_name: 'Nested enough', custom_fields: {note_0: 'x'}}]})
        expect(bulk.body.summary).to.include({created: 1})
      })
    })
  })
})
