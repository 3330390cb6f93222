import {expect} from 'chai'

import {IdempotencyService} from '../../src/idempotency/idempotency-service.js'
import {GZIP_FROM_LENGTH, IdempotencyStore} from '../../src/idempotency/idempotency-store.js'
import {createResponse} from '../../src/leads/lead-view.js'
import type {CreateResult} from '../../src/leads/write-types.js'
import {ConflictError, ValidationError} from '../../src/shared/errors.js'
import {counts, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {failNextCommit, holdNextCommit} from '../helpers/commit-hold.js'
import {newTenant, rejectsWith, type TestTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'
const CREATE_ENDPOINT = 'POST /api/agents/crm/leads'

describe('Idempotency-Key', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant

    before(async function () {
      daemon = await startTestDaemon(backend)
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services)
    })
    after(async function () {
      await daemon.stop()
    })

    /** A create under `key` that stops inside its transaction, holding the key, until released. */
    async function holdingItsKey(body: Record<string, unknown>, key: string): Promise<{first: Promise<CreateResult>; release: () => void}> {
      const idempotency = daemon.services.idempotency
      const claim = idempotency.claim(idempotency.ticket(tenant.customer.id, CREATE_ENDPOINT, key, body))
      const held = holdNextCommit(daemon.db)
      const first = daemon.services.leadsWrite.create(tenant.customer.id, body, {
        key: {claim, respond: (created) => ({statusCode: 201, body: JSON.stringify(createResponse(created as CreateResult))})},
      })
      await held.entered
      return {first, release: held.release}
    }

    it('replays the stored response byte for byte and creates nothing new', async function () {
      const first = await postJson(daemon, tenant, CREATE, {contact_name: 'Once', contact_email: 'once@example.org'}, 'key-1')
      expect(first.status).to.equal(201)
      expect(first.headers.get('idempotent-replayed')).to.equal(null)
      const again = await postJson(daemon, tenant, CREATE, {contact_name: 'Once', contact_email: 'once@example.org'}, 'key-1')
      expect(again.status).to.equal(201)
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('treats a body with other key order and whitespace as the same request', async function () {
      const first = await postJson(daemon, tenant, CREATE, '{"contact_name":"Order","custom_fields":{"lead_line":"buyer"}}', 'key-2')
      const again = await postJson(daemon, tenant, CREATE, '{ "custom_fields" : { "lead_line" : "buyer" },\n "contact_name" : "Order" }', 'key-2')
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
    })

    it('answers a reused key with another body with 409 and changes nothing', async function () {
      await postJson(daemon, tenant, CREATE, {contact_name: 'First'}, 'key-3')
      const reused = await postJson(daemon, tenant, CREATE, {contact_name: 'Second'}, 'key-3')
      expect(reused.status).to.equal(409)
      expect(reused.body.error).to.include({type: 'invalid_request_error', code: 409})
      expect(reused.body.error.message).to.match(/different request body/)
      // Retrying cannot help here: no Retry-After, unlike a key whose first request is still running.
      expect(reused.headers.get('retry-after')).to.equal(null)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('scopes keys per endpoint and per customer', async function () {
      await postJson(daemon, tenant, CREATE, {contact_name: 'Single'}, 'shared-key')
      const bulk = await postJson(daemon, tenant, BULK, {leads: [{contact_name: 'Bulk'}]}, 'shared-key')
      expect(bulk.status).to.equal(200)
      expect(bulk.headers.get('idempotent-replayed')).to.equal(null)
      const other = await newTenant(daemon.services)
      const otherCreate = await postJson(daemon, other, CREATE, {contact_name: 'Other'}, 'shared-key')
      expect(otherCreate.status).to.equal(201)
      expect(otherCreate.headers.get('idempotent-replayed')).to.equal(null)
      expect(otherCreate.body.lead.customer_id).to.equal(other.customer.id)
    })

    it('stores and replays a 400', async function () {
      const first = await postJson(daemon, tenant, CREATE, {contact_name: 'x', stage_slug: 'nope'}, 'key-4')
      expect(first.status).to.equal(400)
      const again = await postJson(daemon, tenant, CREATE, {contact_name: 'x', stage_slug: 'nope'}, 'key-4')
      expect(again.status).to.equal(400)
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
    })

    it('rejects a key over 255 characters with 400 naming the header', async function () {
      const response = await postJson(daemon, tenant, CREATE, {contact_name: 'x'}, 'k'.repeat(256))
      expect(response.status).to.equal(400)
      expect(response.body.error.param).to.equal('Idempotency-Key')
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
    })

    it('rejects an empty key with 400 naming the header, on both write endpoints, writing nothing', async function () {
      for (const [path, body] of [
        [CREATE, {contact_name: 'Empty key'}],
        ['/api/agents/crm/leads/bulk', {leads: [{contact_name: 'Empty key'}]}],
      ] as const) {
        for (const key of ['', '   ']) {
          const response = await postJson(daemon, tenant, path, body, key)
          expect(response.status, `${path} with key "${key}"`).to.equal(400)
          expect(response.body.error).to.deep.equal({
            type: 'invalid_request_error',
            code: 400,
            message: 'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces',
            param: 'Idempotency-Key',
          })
        }
      }
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
    })

    it('runs a key sent by many requests at once exactly once', async function () {
      const responses = await Promise.all(Array.from({length: 10}, () => postJson(daemon, tenant, CREATE, {contact_email: 'burst@example.org'}, 'burst-key')))
      for (const response of responses) expect(response.status).to.be.oneOf([201, 409])
      const created = responses.filter((r) => r.status === 201)
      expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).to.have.length(1)
      for (const conflict of responses.filter((r) => r.status === 409)) expect(conflict.body.error.message).to.match(/still in progress/)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('stores a large response gzipped and replays it byte for byte', async function () {
      // 200 rows answer with about 100 KB of JSON: over GZIP_FROM_LENGTH, so kept gzipped. Accents
      // and an emoji check that the text comes back as the same UTF-8, not cut mid-character.
      const leads = Array.from({length: 200}, (_, i) => ({contact_name: `José Núñez 🎉 ${i}`, contact_email: `gz-${i}@example.org`}))
      const first = await postJson(daemon, tenant, BULK, {leads}, 'gzip-key')
      expect(first.status).to.equal(200)
      expect(first.text.length).to.be.above(GZIP_FROM_LENGTH)
      const [row] = (await daemon.db('idempotency_keys').where({customer_id: tenant.customer.id, idempotency_key: 'gzip-key'})) as Array<{
        response_body: string | null
        response_gzip: Buffer | null
      }>
      expect(row!.response_body).to.equal(null)
      expect(row!.response_gzip!.length).to.be.below(first.text.length / 4)
      const again = await postJson(daemon, tenant, BULK, {leads}, 'gzip-key')
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      expect((await counts(daemon, tenant)).leads).to.equal(200)
    })

    it('keeps a small response as text', async function () {
      const first = await postJson(daemon, tenant, CREATE, {contact_name: 'Small'}, 'text-key')
      const [row] = (await daemon.db('idempotency_keys').where({customer_id: tenant.customer.id, idempotency_key: 'text-key'})) as Array<{
        response_body: string | null
        response_gzip: Buffer | null
      }>
      expect(row!.response_body).to.equal(first.text)
      expect(row!.response_gzip).to.equal(null)
    })

    it('replays a bulk dry run without writing', async function () {
      const body = {leads: [{contact_name: 'Dry'}], dry_run: true}
      const first = await postJson(daemon, tenant, BULK, body, 'dry-key')
      const again = await postJson(daemon, tenant, BULK, body, 'dry-key')
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
    })

    it('answers 409 while the first request is in its transaction, then replays it', async function () {
      const body = {contact_name: 'In flight', contact_email: 'flight@example.org'}
      const {first, release} = await holdingItsKey(body, 'flight')
      if (backend.name === 'mysql') {
        const during = await postJson(daemon, tenant, CREATE, body, 'flight')
        expect(during.status).to.equal(409)
        expect(during.body.error.message).to.match(/still in progress/)
        // The same request will get its answer: Retry-After tells a client to retry it, unlike a 409 for another body.
        expect(during.headers.get('retry-after')).to.equal('1')
      }
      // SQLite has one writer: there the second request waits for the first and replays it.
      const later = postJson(daemon, tenant, CREATE, body, 'flight')
      release()
      const created = await first
      const replayed = await later
      expect(replayed.status).to.equal(201)
      expect(replayed.headers.get('idempotent-replayed')).to.equal('true')
      expect(replayed.body.lead.id).to.equal(created.lead.id)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('answers 409 while the first request holds the key, also when the retry first waited seconds for a connection', async function () {
      const body = {contact_name: 'Slow retry', contact_email: 'slow-retry@example.org'}
      // The key's lookup cached (2 s), so the retry's wait for a connection comes inside its write, as under load.
      expect((await daemon.request('/api/agents/crm/leads?limit=1', {token: tenant.token, customerId: tenant.customer.id})).status).to.equal(200)
      const {first, release} = await holdingItsKey(body, 'slow-retry')
      // Every other pooled connection taken for 1.5 s: the retry waits for one before it claims the key.
      const pool = (daemon.db.client as unknown as {pool: {max: number; numUsed(): number}}).pool
      const taken = await Promise.all(Array.from({length: pool.max - pool.numUsed()}, () => daemon.db.client.acquireConnection() as Promise<unknown>))
      const freed = new Promise<void>((resolve) =>
        setTimeout(() => {
          for (const connection of taken) daemon.db.client.releaseConnection(connection)
          resolve()
        }, 1500),
      )
      const retry = postJson(daemon, tenant, CREATE, body, 'slow-retry')
      await freed
      // SQLite has one writer: there the retry waits for the first request and replays it.
      if (backend.name === 'sqlite') release()
      const during = await retry
      release()
      const created = await first
      if (backend.name === 'mysql') {
        expect(during.status, during.text).to.equal(409)
        expect(during.body.error.message).to.match(/still in progress/)
      } else {
        expect(during.headers.get('idempotent-replayed')).to.equal('true')
        expect(during.body.lead.id).to.equal(created.lead.id)
      }
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('answers 409 with Retry-After, not 500, when each claim of the key is refused for a record that then vanishes', async function () {
      const body = {contact_name: 'Vanishing', contact_email: 'vanishing@example.org'}
      expect((await postJson(daemon, tenant, CREATE, body, 'vanishing')).status).to.equal(201)
      // As when, every time the retry reads the key's record, another request's claim has just
      // rolled back (or the record expired): the service says to claim again.
      const idempotency = daemon.services.idempotency
      const afterRefusal = idempotency.afterRefusal
      let refusals = 0
      idempotency.afterRefusal = async () => {
        refusals++
        return {kind: 'retry'}
      }
      try {
        const retried = await postJson(daemon, tenant, CREATE, body, 'vanishing')
        expect(retried.status, retried.text).to.equal(409)
        expect(retried.body.error.message).to.match(/still in progress/)
        expect(retried.headers.get('retry-after')).to.equal('1')
        expect(refusals).to.equal(3)
      } finally {
        idempotency.afterRefusal = afterRefusal
      }
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('leaves the key free when the write fails, so the retry runs', async function () {
      const body = {contact_name: 'Fails once'}
      const idempotency = daemon.services.idempotency
      const claim = idempotency.claim(idempotency.ticket(tenant.customer.id, CREATE_ENDPOINT, 'fails-once', body))
      const died = new Error('the process died')
      failNextCommit(daemon.db, died)
      const failing = daemon.services.leadsWrite.create(tenant.customer.id, body, {key: {claim, respond: () => ({statusCode: 201, body: '{}'})}})
      expect(await rejectsWith(failing, Error)).to.equal(died)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
      const retry = await postJson(daemon, tenant, CREATE, body, 'fails-once')
      expect(retry.status).to.equal(201)
      expect(retry.headers.get('idempotent-replayed')).to.equal(null)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    describe('IdempotencyService', function () {
      const clock = new ManualClock()
      let store: IdempotencyStore
      let service: IdempotencyService

      beforeEach(function () {
        store = new IdempotencyStore(daemon.db)
        service = new IdempotencyService(store, clock)
      })

      it('purges keys after 24 hours, after which the key is new again', async function () {
        const ticket = service.ticket(tenant.customer.id, 'POST /x', 'old', {a: 1})
        expect(await service.storeAlone(ticket, 400, '{"error":{}}')).to.equal(null)
        expect(await service.storeAlone(ticket, 400, '{"error":{}}')).to.deep.equal({kind: 'replay', statusCode: 400, body: '{"error":{}}'})
        expect(await service.afterRefusal(ticket, 'stored')).to.deep.equal({kind: 'replay', statusCode: 400, body: '{"error":{}}'})
        await rejectsWith(service.afterRefusal(service.ticket(tenant.customer.id, 'POST /x', 'old', {a: 2}), 'stored'), ConflictError)
        clock.advance(24 * 60 * 60 * 1000)
        expect(await service.purgeExpired()).to.be.greaterThan(0)
        expect(await service.storeAlone(service.ticket(tenant.customer.id, 'POST /x', 'old', {a: 2}), 201, '{}')).to.equal(null)
      })

      it('rejects keys with spaces or control characters', function () {
        expect(() => service.ticket(tenant.customer.id, 'POST /x', 'has space', {})).to.throw(ValidationError)
        expect(() => service.ticket(tenant.customer.id, 'POST /x', '', {})).to.throw(ValidationError)
        expect(() => service.ticket(tenant.customer.id, 'POST /x', 'tab\there', {})).to.throw(ValidationError)
      })
    })
  })
})
