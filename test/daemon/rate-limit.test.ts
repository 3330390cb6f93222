import {expect} from 'chai'

import {counts, getFrom, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'
const FIXED_MESSAGE = 'Rate limit exceeded. Retry later, after the number of seconds in Retry-After.'

function rateHeaders(response: TestResponse): {limit: number; remaining: number; reset: number; retryAfter: number | null} {
  const read = (name: string) => {
    const value = response.headers.get(name)
    expect(value, `${name} on a ${response.status}`).to.match(/^\d+$/)
    return Number(value)
  }
  const retryAfter = response.headers.get('retry-after')
  return {
    limit: read('ratelimit-limit'),
    remaining: read('ratelimit-remaining'),
    reset: read('ratelimit-reset'),
    retryAfter: retryAfter === null ? null : Number(retryAfter),
  }
}

function expect429(response: TestResponse): void {
  expect(response.status).to.equal(429)
  expect(response.body).to.deep.equal({error: {type: 'rate_limit_error', code: 429, message: FIXED_MESSAGE}})
  const headers = rateHeaders(response)
  expect(headers.remaining).to.equal(0)
  expect(headers.retryAfter).to.equal(headers.reset)
}

describe('rate limits', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const list = (as: TestTenant = tenant) => daemon.request(LIST, {token: as.token, customerId: as.customer.id})

    before(async function () {
      daemon = await startTestDaemon(backend, {limitsCacheTtlMs: 0})
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services)
    })
    after(async function () {
      await daemon.stop()
    })

    it('allows 60 requests a minute and answers the 61st with 429, Retry-After and the headers', async function () {
      for (let i = 1; i <= 60; i++) {
        const response = await list()
        expect(response.status).to.equal(200)
        const headers = rateHeaders(response)
        expect(headers).to.include({limit: 60, remaining: 60 - i, retryAfter: null})
        expect(headers.reset).to.be.within(1, 60)
      }
      const refused = await list()
      expect429(refused)
      expect(rateHeaders(refused)).to.include({limit: 60})
    })

    it('keeps keys apart: another key of the same customer has its own budget', async function () {
      await daemon.services.rateLimits.set({type: 'customer', id: tenant.customer.id}, {perMinute: 2})
      await list()
      await list()
      expect429(await list())
      const second = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:read']})
      const other = await daemon.request(LIST, {token: second.token, customerId: tenant.customer.id})
      expect(other.status).to.equal(200)
      expect(rateHeaders(other).remaining).to.equal(1)
    })

    it('refuses by the hour window without spending the minute window', async function () {
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perHour: 5})
      for (let i = 0; i < 5; i++) expect((await list()).status).to.equal(200)
      const refused = await list()
      expect429(refused)
      expect(rateHeaders(refused).limit).to.equal(5)
      expect(rateHeaders(refused).reset).to.be.within(3540, 3600)
      expect(await daemon.services.limiter.usage(tenant.key.id)).to.deep.include({minute: 5, hour: 6})
    })

    it('refuses by the minute window without spending the hour window', async function () {
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 3})
      for (let i = 0; i < 3; i++) expect((await list()).status).to.equal(200)
      expect429(await list())
      expect429(await list())
      expect(await daemon.services.limiter.usage(tenant.key.id)).to.deep.include({hour: 3})
    })

    it('tells a key that spent its minute and its hour together to wait for the hour', async function () {
      // A retry after the minute window alone would be refused again, by the hour window.
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 3, perHour: 3})
      for (let i = 1; i <= 2; i++) expect((await list()).status).to.equal(200)
      const last = await list()
      expect(last.status).to.equal(200)
      expect(rateHeaders(last)).to.include({limit: 3, remaining: 0})
      expect(rateHeaders(last).reset, 'RateLimit-Reset of the last request the hour allows').to.be.within(3540, 3600)
      for (let i = 0; i < 2; i++) {
        const refused = await list()
        expect429(refused)
        expect(rateHeaders(refused).retryAfter, 'Retry-After').to.be.within(3540, 3600)
      }
      expect(await daemon.services.limiter.usage(tenant.key.id)).to.deep.include({hour: 3})
    })

    it('reports the window with the least remaining', async function () {
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 50, perHour: 10})
      const response = await list()
      expect(rateHeaders(response)).to.include({limit: 10, remaining: 9})
      expect(rateHeaders(response).reset).to.be.greaterThan(60)
    })

    it('counts bulk requests on their own bucket, independent of the default one', async function () {
      for (let i = 1; i <= 10; i++) {
        const response = await postJson(daemon, tenant, BULK, {leads: [{contact_name: `Bulk ${i}`}]})
        expect(response.status).to.equal(200)
        expect(rateHeaders(response)).to.include({limit: 10, remaining: 10 - i})
      }
      expect429(await postJson(daemon, tenant, BULK, {leads: [{contact_name: 'Eleventh'}]}))
      const read = await list()
      expect(read.status).to.equal(200)
      expect(rateHeaders(read)).to.include({limit: 60, remaining: 59})
      const single = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Single'})
      expect(single.status).to.equal(201)
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 11, events: 1})
    })

    it('routes only the exact bulk path, so no spelling of it escapes the bulk bucket', async function () {
      for (const path of [`${BULK}/`, BULK.toUpperCase()]) {
        const response = await postJson(daemon, tenant, path, {leads: [{contact_name: 'x'}]})
        expect(response.status).to.equal(404)
      }
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
    })

    it('does not store a 429 under an Idempotency-Key', async function () {
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 1})
      await list()
      expect429(await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Later'}, 'after-429'))
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 100})
      const retried = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Later'}, 'after-429')
      expect(retried.status).to.equal(201)
      expect(retried.headers.get('idempotent-replayed')).to.equal(null)
    })

    it('applies a key override over a customer override over the default', async function () {
      await daemon.services.rateLimits.set({type: 'customer', id: tenant.customer.id}, {perMinute: 4, perHour: 40})
      expect(rateHeaders(await list())).to.include({limit: 4})
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 7})
      expect(rateHeaders(await list())).to.include({limit: 7, remaining: 5})
      await daemon.services.rateLimits.clear({type: 'key', id: tenant.key.id})
      await daemon.services.rateLimits.clear({type: 'customer', id: tenant.customer.id})
      expect(rateHeaders(await list())).to.include({limit: 60, remaining: 57})
    })

    it('never limits an internal key and says so in its headers', async function () {
      const internal = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:read'], internal: true})
      for (let i = 0; i < 75; i++) {
        const response = await daemon.request(LIST, {token: internal.token, customerId: tenant.customer.id})
        expect(response.status).to.equal(200)
        expect(rateHeaders(response)).to.deep.equal({limit: 60, remaining: 60, reset: 0, retryAfter: null})
      }
    })

    it('puts the headers on 400, 401, 403, 404, 405, 413 and 415 responses', async function () {
      const auth = {token: tenant.token, customerId: tenant.customer.id}
      const json = {'content-type': 'application/json'}
      const writeOnly = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:write']})
      const responses = [
        await daemon.request(`${LIST}?limit=0`, auth),
        await daemon.request(LIST),
        await daemon.request(LIST, {token: writeOnly.token, customerId: tenant.customer.id}),
        await daemon.request('/api/agents/crm/nothing', auth),
        await daemon.request(LIST, {...auth, method: 'DELETE'}),
        await daemon.request('/api/agents/crm/leads', {...auth, method: 'POST', headers: json, body: JSON.stringify({contact_name: 'x'.repeat(1_100_000)})}),
        await daemon.request('/api/agents/crm/leads', {...auth, method: 'POST', headers: {'content-type': 'text/plain'}, body: 'x'}),
      ]
      expect(responses.map((r) => r.status)).to.deep.equal([400, 401, 403, 404, 405, 413, 415])
      for (const response of responses) rateHeaders(response)
      expect(rateHeaders(responses[1]!).limit).to.equal(100)
    })
  })
})

describe('rate limits for requests without a valid key', function () {
  forEachBackend((backend) => {
    it('counts them per client address: the 101st in a minute is 429', async function () {
      const daemon = await startTestDaemon(backend)
      try {
        for (let i = 1; i <= 100; i++) {
          const response = await daemon.request(LIST, {token: 'svc_' + 'f'.repeat(64), customerId: '6f1c0000-0000-4000-8000-000000000000'})
          expect(response.status).to.equal(401)
          expect(rateHeaders(response)).to.include({limit: 100, remaining: 100 - i})
        }
        expect429(await daemon.request(LIST))
      } finally {
        await daemon.stop()
      }
    })
  })
})

describe('rate-limit overrides reaching a running daemon', function () {
  forEachBackend((backend) => {
    it('applies a change made elsewhere within its 5 s cache (bound: 10 s)', async function () {
      const clock = new ManualClock(Date.now())
      const daemon = await startTestDaemon(backend, {clock})
      try {
        const tenant = await newTenant(daemon.services)
        const call = () => daemon.request(LIST, {token: tenant.token, customerId: tenant.customer.id})
        expect(rateHeaders(await call()).limit).to.equal(60)
        await daemon.services.rateLimits.set({type: 'customer', id: tenant.customer.id}, {perMinute: 500})
        clock.advance(4999)
        expect(rateHeaders(await call()).limit).to.equal(60)
        clock.advance(1)
        expect(rateHeaders(await call()).limit).to.equal(500)
      } finally {
        await daemon.stop()
      }
    })
  })
})

describe('the per-address limit behind a load balancer (LEADS_TRUSTED_PROXIES)', function () {
  forEachBackend((backend) => {
    it('counts each client X-Forwarded-For names through a trusted peer, and ignores the header from any other peer', async function () {
      const daemon = await startTestDaemon(backend, {}, {LEADS_TRUSTED_PROXIES: '127.0.0.1'})
      try {
        const anonymous = {authorization: `Bearer svc_${'f'.repeat(64)}`}
        const through = (client: string) => getFrom('127.0.0.1', daemon.url + LIST, {...anonymous, 'x-forwarded-for': client})
        // A client that writes its own header is counted under the hop the balancer appended.
        for (let i = 0; i < 100; i++) expect(await through(i % 2 === 0 ? '198.51.100.7' : `10.9.9.${i}, 198.51.100.7`)).to.equal(401)
        expect(await through('198.51.100.7')).to.equal(429)
        expect(await through('198.51.100.8'), 'another client behind the balancer').to.equal(401)
        // Straight from 127.0.0.2 (not a trusted peer) a header naming a fresh address changes nothing.
        for (let i = 0; i < 100; i++) expect(await getFrom('127.0.0.2', daemon.url + LIST, {...anonymous, 'x-forwarded-for': `203.0.113.${i}`})).to.equal(401)
        expect(await getFrom('127.0.0.2', daemon.url + LIST, {...anonymous, 'x-forwarded-for': '203.0.113.200'})).to.equal(429)
      } finally {
        await daemon.stop()
      }
    })
  })
})
