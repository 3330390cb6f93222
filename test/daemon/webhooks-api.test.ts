import {expect} from 'chai'

import {resolveMasterKey} from '../../src/config/master-key.js'
import {SecretBox} from '../../src/webhooks/secret-box.js'
import type {WebhookWithSecret} from '../../src/webhooks/webhooks-service.js'
import {forEachBackend} from '../helpers/backends.js'
import {holdNextCommit} from '../helpers/commit-hold.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const BASE = '/api/agents/crm/lead-webhooks'
const WEBHOOK_FIELDS = ['id', 'url', 'event_types', 'is_active', 'timeout_seconds', 'retry_attempts', 'description', 'created_at', 'updated_at']
// Resolves every name to a public address, so registration tests need no real DNS.
const publicLookup = async () => [{address: '93.184.216.34', family: 4 as const}]

describe('webhook management API', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const call = (method: string, path: string, body?: unknown, as: TestTenant = tenant) =>
      daemon.request(path, {
        method,
        token: as.token,
        customerId: as.customer.id,
        headers: {'content-type': 'application/json'},
        body: body === undefined ? undefined : JSON.stringify(body),
      })

    before(async function () {
      daemon = await startTestDaemon(backend, {lookup: publicLookup})
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
    })
    after(async function () {
      await daemon.stop()
    })

    it('registers a webhook with defaults and returns its secret once', async function () {
      const response = await call('POST', BASE, {url: 'https://hooks.example.com/leads', event_types: ['lead.created']})
      expect(response.status).to.equal(201)
      expect(response.body).to.have.keys(['webhook', 'secret'])
      expect(response.body.secret).to.match(/^svc_whsec_[0-9a-f]{64}$/)
      const webhook = response.body.webhook
      expect(webhook).to.have.keys(WEBHOOK_FIELDS)
      expect(webhook.id).to.match(/^wh_[0-9a-f]{24}$/)
      expect(webhook).to.deep.include({
        url: 'https://hooks.example.com/leads',
        event_types: ['lead.created'],
        is_active: true,
        timeout_seconds: 10,
        retry_attempts: 5,
        description: null,
      })

      const row = await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhook.id}).first()
      expect(JSON.stringify(row)).not.to.include(response.body.secret)
      const listed = await call('GET', BASE)
      expect(listed.status).to.equal(200)
      expect(listed.body).to.deep.equal({webhooks: [webhook]})
      expect(listed.text).not.to.include('svc_whsec_')
      expect(daemon.logs.join('')).not.to.include(response.body.secret)
    })

    it('accepts description, timeout_seconds and retry_attempts', async function () {
      const response = await call('POST', BASE, {
        url: 'https://hooks.example.com/a',
        event_types: ['lead.created'],
        description: 'CRM sync',
        timeout_seconds: 60,
        retry_attempts: 0,
      })
      expect(response.body.webhook).to.include({description: 'CRM sync', timeout_seconds: 60, retry_attempts: 0})
    })

    it('takes a URL scheme and host in any case and stores them lowercased (RFC 3986)', async function () {
      const created = await call('POST', BASE, {url: 'HTTPS://Hooks.Example.COM/Leads?A=B', event_types: ['lead.created']})
      expect(created.status, created.text).to.equal(201)
      expect(created.body.webhook.url).to.equal('https://hooks.example.com/Leads?A=B')
      const changed = await call('PATCH', `${BASE}/${created.body.webhook.id}`, {url: 'Https://HOOKS.example.com/b'})
      expect(changed.status, changed.text).to.equal(200)
      expect(changed.body.webhook.url).to.equal('https://hooks.example.com/b')
      // Only the case is free: another scheme is refused as before.
      const http = await call('POST', BASE, {url: 'HTTP://hooks.example.com/', event_types: ['lead.created']})
      expect(http.status).to.equal(400)
      expect(http.body.error.param).to.equal('url')
    })

    it('trims url and description as it trims a lead’s strings; a blank description is null', async function () {
      const created = await call('POST', BASE, {url: '  https://hooks.example.com/t \n', event_types: ['lead.created'], description: '  CRM sync\t'})
      expect(created.status, created.text).to.equal(201)
      expect(created.body.webhook).to.include({url: 'https://hooks.example.com/t', description: 'CRM sync'})
      const changed = await call('PATCH', `${BASE}/${created.body.webhook.id}`, {url: ' https://hooks.example.com/u ', description: '   '})
      expect(changed.status, changed.text).to.equal(200)
      expect(changed.body.webhook).to.include({url: 'https://hooks.example.com/u', description: null})
      const blank = await call('POST', BASE, {url: '   ', event_types: ['lead.created']})
      expect(blank.status).to.equal(400)
      expect(blank.body.error.param).to.equal('url')
    })

    for (const [label, body, param] of [
      ['an http URL', {url: 'http://hooks.example.com/', event_types: ['lead.created']}, 'url'],
      ['a loopback URL', {url: 'https://127.0.0.1/', event_types: ['lead.created']}, 'url'],
      ['a metadata URL', {url: 'https://169.254.169.254/latest', event_types: ['lead.created']}, 'url'],
      ['credentials in the URL', {url: 'https://user:pw@hooks.example.com/', event_types: ['lead.created']}, 'url'],
      ['an event type never emitted', {url: 'https://hooks.example.com/', event_types: ['lead.updated']}, 'event_types'],
      ['no event types', {url: 'https://hooks.example.com/', event_types: []}, 'event_types'],
      ['a timeout of 61 s', {url: 'https://hooks.example.com/', event_types: ['lead.created'], timeout_seconds: 61}, 'timeout_seconds'],
      ['11 retries', {url: 'https://hooks.example.com/', event_types: ['lead.created'], retry_attempts: 11}, 'retry_attempts'],
      ['an unknown field', {url: 'https://hooks.example.com/', event_types: ['lead.created'], secret: 'mine'}, 'secret'],
      ['no url', {event_types: ['lead.created']}, 'url'],
    ] as const) {
      it(`rejects ${label} with 400 naming ${param}`, async function () {
        const response = await call('POST', BASE, body)
        expect(response.status).to.equal(400)
        expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param})
        expect((await call('GET', BASE)).body.webhooks).to.deep.equal([])
      })
    }

    it('registers one webhook for a retried Idempotency-Key and replays the first answer, secret included', async function () {
      const body = {url: 'https://hooks.example.com/once', event_types: ['lead.created']}
      const register = (sent: unknown = body) =>
        daemon.request(BASE, {
          method: 'POST',
          token: tenant.token,
          customerId: tenant.customer.id,
          headers: {'content-type': 'application/json', 'idempotency-key': 'register-once'},
          body: JSON.stringify(sent),
        })
      const first = await register()
      const again = await register()
      expect(first.status).to.equal(201)
      expect(first.headers.get('idempotent-replayed')).to.equal(null)
      expect(again.status).to.equal(201)
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      expect(Number((await daemon.db('webhooks').where({customer_id: tenant.customer.id}).count({n: '*'}))[0]?.n)).to.equal(1)
      // The stored answer holds the secret sealed, like the webhook's row.
      const stored = await daemon.db('idempotency_keys').where({customer_id: tenant.customer.id, idempotency_key: 'register-once'})
      expect(stored).to.have.length(1)
      expect(JSON.stringify(stored)).not.to.include(first.body.secret)

      const other = await register({...body, url: 'https://hooks.example.com/other'})
      expect(other.status).to.equal(409)
      expect(other.body.error).to.include({type: 'invalid_request_error', code: 409})
    })

    it('answers 409 while the first registration under a key is in its transaction, then replays it', async function () {
      const body = {url: 'https://hooks.example.com/in-flight', event_types: ['lead.created']}
      const register = () =>
        daemon.request(BASE, {
          method: 'POST',
          token: tenant.token,
          customerId: tenant.customer.id,
          headers: {'content-type': 'application/json', 'idempotency-key': 'in-flight'},
          body: JSON.stringify(body),
        })
      const idempotency = daemon.services.idempotency
      const claim = idempotency.claim(idempotency.ticket(tenant.customer.id, 'POST /api/agents/crm/lead-webhooks', 'in-flight', body))
      const held = holdNextCommit(daemon.db)
      // The route keeps its answers sealed (they hold the secret); so does this stand-in for it.
      const answer = (created: WebhookWithSecret) => daemon.services.webhooks.sealAnswer(JSON.stringify({webhook: {id: created.webhook.id}}))
      const first = daemon.services.webhooks.create(tenant.customer.id, body, {
        key: {claim, respond: (created) => ({statusCode: 201, body: answer(created as WebhookWithSecret)})},
      })
      await held.entered
      if (backend.name === 'mysql') {
        const during = await register()
        expect(during.status).to.equal(409)
        expect(during.body.error.message).to.match(/still in progress/)
      }
      // SQLite has one writer: there the second request waits for the first and replays it.
      const later = register()
      held.release()
      const created = await first
      const replayed = await later
      expect(replayed.status).to.equal(201)
      expect(replayed.headers.get('idempotent-replayed')).to.equal('true')
      expect(replayed.body).to.deep.equal({webhook: {id: created.webhook.id}})
      expect(Number((await daemon.db('webhooks').where({customer_id: tenant.customer.id}).count({n: '*'}))[0]?.n)).to.equal(1)
    })

    it('answers 400 naming Idempotency-Key for an empty key and registers nothing', async function () {
      const response = await daemon.request(BASE, {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json', 'idempotency-key': ''},
        body: JSON.stringify({url: 'https://hooks.example.com/empty-key', event_types: ['lead.created']}),
      })
      expect(response.status).to.equal(400)
      expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param: 'Idempotency-Key'})
      expect(Number((await daemon.db('webhooks').where({customer_id: tenant.customer.id}).count({n: '*'}))[0]?.n)).to.equal(0)
    })

    it('allows at most 20 webhooks per customer', async function () {
      for (let i = 0; i < 20; i++)
        expect((await call('POST', BASE, {url: `https://hooks.example.com/${i}`, event_types: ['lead.created']})).status).to.equal(201)
      const refused = await call('POST', BASE, {url: 'https://hooks.example.com/21', event_types: ['lead.created']})
      expect(refused.status).to.equal(400)
      expect(refused.body.error.message).to.match(/at most 20 webhooks/)

      // Under a key the refusal is what is kept, never the answer the registration would have had.
      const underKey = () =>
        daemon.request(BASE, {
          method: 'POST',
          token: tenant.token,
          customerId: tenant.customer.id,
          headers: {'content-type': 'application/json', 'idempotency-key': 'one-too-many'},
          body: JSON.stringify({url: 'https://hooks.example.com/21', event_types: ['lead.created']}),
        })
      const first = await underKey()
      const again = await underKey()
      expect([first.status, again.status]).to.deep.equal([400, 400])
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      expect(Number((await daemon.db('webhooks').where({customer_id: tenant.customer.id}).count({n: '*'}))[0]?.n)).to.equal(20)
    })

    it('updates fields, rotates the secret on request, and 404s for unknown ids', async function () {
      const created = await call('POST', BASE, {url: 'https://hooks.example.com/a', event_types: ['lead.created']})
      const id = created.body.webhook.id
      const updated = await call('PATCH', `${BASE}/${id}`, {url: 'https://hooks.example.com/b', description: 'moved', is_active: false, timeout_seconds: 5})
      expect(updated.status).to.equal(200)
      expect(updated.body).to.have.keys(['webhook'])
      expect(updated.body.webhook).to.include({url: 'https://hooks.example.com/b', description: 'moved', is_active: false, timeout_seconds: 5})
      const rotated = await call('PATCH', `${BASE}/${id}`, {rotate_secret: true})
      expect(rotated.body.secret)
        .to.match(/^svc_whsec_[0-9a-f]{64}$/)
        .and.not.equal(created.body.secret)
      expect((await call('PATCH', `${BASE}/wh_000000000000000000000000`, {description: 'x'})).status).to.equal(404)
      const bad = await call('PATCH', `${BASE}/${id}`, {url: 'https://10.0.0.1/'})
      expect(bad.status).to.equal(400)
      expect(bad.body.error.param).to.equal('url')
    })

    it('keeps the secret a rotation replaces, sealed, with the time of the rotation; a second rotation keeps the one it retires', async function () {
      const box = new SecretBox(resolveMasterKey(daemon.services.config))
      const created = await call('POST', BASE, {url: 'https://hooks.example.com/a', event_types: ['lead.created']})
      const id = created.body.webhook.id as string
      const stored = () => daemon.db('webhooks').where({customer_id: tenant.customer.id, id}).first()
      expect(await stored()).to.include({previous_secret_ciphertext: null, secret_rotated_at: null})

      const first = await call('PATCH', `${BASE}/${id}`, {rotate_secret: true})
      expect(first.status).to.equal(200)
      expect(first.body).to.have.keys(['webhook', 'secret'])
      const afterFirst = await stored()
      expect(box.open(afterFirst.secret_ciphertext)).to.equal(first.body.secret)
      expect(box.open(afterFirst.previous_secret_ciphertext)).to.equal(created.body.secret)
      expect(JSON.stringify(afterFirst)).not.to.include('svc_whsec_')
      expect(Number(afterFirst.secret_rotated_at)).to.equal(Date.parse(first.body.webhook.updated_at))

      const second = await call('PATCH', `${BASE}/${id}`, {rotate_secret: true})
      const afterSecond = await stored()
      expect(box.open(afterSecond.secret_ciphertext)).to.equal(second.body.secret)
      expect(box.open(afterSecond.previous_secret_ciphertext)).to.equal(first.body.secret)
      expect(Number(afterSecond.secret_rotated_at)).to.equal(Date.parse(second.body.webhook.updated_at))

      // Other changes leave the secrets and the rotation alone.
      await call('PATCH', `${BASE}/${id}`, {description: 'unrelated'})
      expect(await stored()).to.include({secret_ciphertext: afterSecond.secret_ciphertext, previous_secret_ciphertext: afterSecond.previous_secret_ciphertext})
      expect(Number((await stored()).secret_rotated_at)).to.equal(Number(afterSecond.secret_rotated_at))
      expect(await daemon.services.webhooks.update(tenant.customer.id, id, {rotate_secret: false})).to.have.keys(['webhook'])
      expect(daemon.logs.join('')).not.to.include(first.body.secret)
    })

    it('rotates once for a retried Idempotency-Key, scoped to the webhook, and replays the first answer', async function () {
      const box = new SecretBox(resolveMasterKey(daemon.services.config))
      const register = async (url: string) => (await call('POST', BASE, {url, event_types: ['lead.created']})).body
      const one = await register('https://hooks.example.com/one')
      const two = await register('https://hooks.example.com/two')
      const patch = (id: string, body: unknown, key: string) =>
        daemon.request(`${BASE}/${id}`, {
          method: 'PATCH',
          token: tenant.token,
          customerId: tenant.customer.id,
          headers: {'content-type': 'application/json', 'idempotency-key': key},
          body: JSON.stringify(body),
        })
      const first = await patch(one.webhook.id, {rotate_secret: true}, 'rotate-once')
      const again = await patch(one.webhook.id, {rotate_secret: true}, 'rotate-once')
      expect(first.status).to.equal(200)
      expect(first.headers.get('idempotent-replayed')).to.equal(null)
      expect(again.status).to.equal(200)
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      // Rotated once: the original secret is still the previous one.
      const row = await daemon.db('webhooks').where({id: one.webhook.id}).first()
      expect(box.open(row.secret_ciphertext)).to.equal(first.body.secret)
      expect(box.open(row.previous_secret_ciphertext)).to.equal(one.secret)
      const stored = await daemon.db('idempotency_keys').where({customer_id: tenant.customer.id, idempotency_key: 'rotate-once'})
      expect(JSON.stringify(stored)).not.to.include(first.body.secret)

      // The same key for another webhook is another request.
      const elsewhere = await patch(two.webhook.id, {rotate_secret: true}, 'rotate-once')
      expect(elsewhere.status).to.equal(200)
      expect(elsewhere.headers.get('idempotent-replayed')).to.equal(null)
      expect(elsewhere.body.webhook.id).to.equal(two.webhook.id)

      const other = await patch(one.webhook.id, {description: 'other'}, 'rotate-once')
      expect(other.status).to.equal(409)
      expect(other.body.error).to.include({type: 'invalid_request_error', code: 409})
      const empty = await patch(one.webhook.id, {rotate_secret: true}, '')
      expect(empty.status).to.equal(400)
      expect(empty.body.error).to.include({type: 'invalid_request_error', code: 400, param: 'Idempotency-Key'})
      const missing = await patch('wh_000000000000000000000000', {description: 'x'}, 'absent')
      expect(missing.status).to.equal(404)
      expect((await daemon.db('webhooks').where({id: one.webhook.id}).first()).secret_ciphertext).to.equal(row.secret_ciphertext)
    })

    it('does not send back a signing secret or a token sent where a webhook id goes', async function () {
      const created = await call('POST', BASE, {url: 'https://hooks.example.com/leads', event_types: ['lead.created']})
      for (const pasted of [created.body.secret as string, tenant.token]) {
        const response = await call('DELETE', `${BASE}/${pasted}`)
        expect(response.status).to.equal(404)
        expect(response.text).to.not.include(pasted.slice(-20))
        expect(response.body.error.message).to.include(`…${pasted.slice(-4)}`)
      }
    })

    it("answers 404 for another customer's webhook on update and delete", async function () {
      const other = await newTenant(daemon.services)
      const theirs = await call('POST', BASE, {url: 'https://hooks.example.com/theirs', event_types: ['lead.created']}, other)
      const id = theirs.body.webhook.id
      for (const [method, body] of [
        ['PATCH', {description: 'mine now'}],
        ['DELETE', undefined],
      ] as const) {
        const response = await call(method, `${BASE}/${id}`, body)
        expect(response.status).to.equal(404)
        expect(response.body.error).to.include({type: 'not_found_error', code: 404})
      }
      expect((await call('GET', BASE)).body.webhooks).to.deep.equal([])
      expect((await call('GET', BASE, undefined, other)).body.webhooks[0].description).to.equal(null)
    })

    it('deletes a webhook and answers {id, deleted: true}', async function () {
      const created = await call('POST', BASE, {url: 'https://hooks.example.com/gone', event_types: ['lead.created']})
      const response = await call('DELETE', `${BASE}/${created.body.webhook.id}`)
      expect(response.status).to.equal(200)
      expect(response.body).to.deep.equal({id: created.body.webhook.id, deleted: true})
      expect((await call('DELETE', `${BASE}/${created.body.webhook.id}`)).status).to.equal(404)
    })

    it('rejects a host that resolves to a private address', async function () {
      const privateDaemon = await startTestDaemon(backend, {lookup: async () => [{address: '10.1.2.3', family: 4}]})
      try {
        const owner = await newTenant(privateDaemon.services)
        const response = await privateDaemon.request(BASE, {
          method: 'POST',
          token: owner.token,
          customerId: owner.customer.id,
          headers: {'content-type': 'application/json'},
          body: JSON.stringify({url: 'https://internal.example.com/', event_types: ['lead.created']}),
        })
        expect(response.status).to.equal(400)
        expect(response.body.error.param).to.equal('url')
        expect(response.body.error.message).to.include('10.1.2.3')
      } finally {
        await privateDaemon.stop()
      }
    })
  })
})
