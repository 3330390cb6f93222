import {expect} from 'chai'

import {IdempotencyService} from '../../src/idempotency/idempotency-service.js'
import {IdempotencyStore} from '../../src/idempotency/idempotency-store.js'
import {ConflictError, ValidationError} from '../../src/shared/errors.js'
import {counts, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, rejectsWith, type TestTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'

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

    it('runs a key sent by many requests at once exactly once', async function () {
      const responses = await Promise.all(
        Array.from({length: 10}, () => postJson(daemon, tenant, CREATE, {contact_email: 'burst@example.org'}, 'burst-key')),
      )
      for (const response of responses) expect(response.status).to.be.oneOf([201, 409])
      const created = responses.filter((r) => r.status === 201)
      expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).to.have.length(1)
      for (const conflict of responses.filter((r) => r.status === 409)) expect(conflict.body.error.message).to.match(/still in progress/)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
    })

    it('replays a bulk dry run without writing', async function () {
      const body = {leads: [{contact_name: 'Dry'}], dry_run: true}
      const first = await postJson(daemon, tenant, BULK, body, 'dry-key')
      const again = await postJson(daemon, tenant, BULK, body, 'dry-key')
      expect(again.headers.get('idempotent-replayed')).to.equal('true')
      expect(again.text).to.equal(first.text)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
    })

    describe('IdempotencyService', function () {
      const clock = new ManualClock()
      let service: IdempotencyService

      beforeEach(function () {
        service = new IdempotencyService(new IdempotencyStore(daemon.services.db), clock)
      })

      it('answers 409 while the first request is in flight, and lets a retry take over after the lease', async function () {
        const first = await service.begin(tenant.customer.id, 'POST /x', 'flight', {a: 1})
        expect(first.kind).to.equal('proceed')
        const error = await rejectsWith(service.begin(tenant.customer.id, 'POST /x', 'flight', {a: 1}), ConflictError)
        expect(error.message).to.match(/still in progress/)
        clock.advance(60_000)
        expect((await service.begin(tenant.customer.id, 'POST /x', 'flight', {a: 1})).kind).to.equal('proceed')
      })

      it('frees a released key (5xx, 429) so the retry runs again', async function () {
        const first = await service.begin(tenant.customer.id, 'POST /x', 'released', {a: 1})
        if (first.kind !== 'proceed') throw new Error('expected a claim')
        await service.release(first.claim)
        expect((await service.begin(tenant.customer.id, 'POST /x', 'released', {a: 1})).kind).to.equal('proceed')
      })

      it('purges keys after 24 hours, after which the key is new again', async function () {
        const first = await service.begin(tenant.customer.id, 'POST /x', 'old', {a: 1})
        if (first.kind !== 'proceed') throw new Error('expected a claim')
        await service.complete(daemon.services.db, first.claim, 201, '{"done":true}')
        const replay = await service.begin(tenant.customer.id, 'POST /x', 'old', {a: 1})
        expect(replay).to.deep.equal({kind: 'replay', statusCode: 201, body: '{"done":true}'})
        clock.advance(24 * 60 * 60 * 1000)
        expect(await service.purgeExpired()).to.be.greaterThan(0)
        expect((await service.begin(tenant.customer.id, 'POST /x', 'old', {a: 2})).kind).to.equal('proceed')
      })

      it('rejects keys with spaces or control characters', async function () {
        await rejectsWith(service.begin(tenant.customer.id, 'POST /x', 'has space', {}), ValidationError)
        await rejectsWith(service.begin(tenant.customer.id, 'POST /x', '', {}), ValidationError)
      })
    })
  })
})
