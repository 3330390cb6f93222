import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {ENDPOINT_SCOPES, type Endpoint, SCOPES} from '../../src/keys/scopes.js'
import {mintToken} from '../../src/keys/tokens.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {type RequestOptions, startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

/** A valid body for each endpoint that takes one, so an authorised call succeeds. */
const SAMPLE_BODIES: Partial<Record<Endpoint, unknown>> = {
  'POST /api/agents/crm/leads': {contact_name: 'Matrix Lead'},
  'POST /api/agents/crm/leads/bulk': {leads: [{contact_name: 'Matrix Lead'}]},
  'POST /api/agents/crm/lead-webhooks': {url: 'https://hooks.example.com/matrix', event_types: ['lead.created']},
  'PATCH /api/agents/crm/lead-webhooks/:id': {description: 'matrix'},
  'POST /api/agents/crm/lead-webhooks/:id/recover': {since: new Date(Date.now() - 3_600_000).toISOString()},
}

/** Every endpoint of the scope table is served. */
const SERVED = Object.keys(ENDPOINT_SCOPES) as Endpoint[]

describe('authentication and scopes', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    let other: TestTenant
    const tokens: Record<'revoked' | 'expired' | 'rotatedOut', string> = {revoked: '', expired: '', rotatedOut: ''}
    let webhookId = ''
    beforeEach(async function () {
      const {webhook} = await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://hooks.example.com/matrix', event_types: ['lead.created']})
      webhookId = webhook.id
    })
    afterEach(async function () {
      await daemon.services.webhooks.delete(tenant.customer.id, webhookId).catch(() => undefined)
    })

    before(async function () {
      // No key cache here, so revocations apply to the very next request.
      daemon = await startTestDaemon(backend, {keyCacheTtlMs: 0, lookup: async () => [{address: '93.184.216.34', family: 4}]})
      const services = daemon.services
      tenant = await newTenant(services)
      other = await newTenant(services)
      const revoked = await services.keys.issue({customerId: tenant.customer.id, scopes: [...SCOPES]})
      await services.keys.revoke(revoked.key.id)
      tokens.revoked = revoked.token
      // Issued for an hour, then its expiry moved into the past: no key can be issued expired.
      const expired = await services.keys.issue({customerId: tenant.customer.id, scopes: [...SCOPES], expiresInMs: 3_600_000})
      await daemon
        .db('api_keys')
        .where({customer_id: tenant.customer.id, id: expired.key.id})
        .update({expires_at: Date.now() - 1000})
      tokens.expired = expired.token
      const rotated = await services.keys.issue({customerId: tenant.customer.id, scopes: [...SCOPES]})
      await services.keys.rotate(rotated.key.id)
      tokens.rotatedOut = rotated.token
    })
    after(async function () {
      await daemon.stop()
    })

    for (const endpoint of SERVED) {
      const [method, template] = endpoint.split(' ') as [string, string]
      // Filled in before the tests run: a webhook of the tenant, for PATCH, DELETE and recover.
      const path = () => template.replace(':id', webhookId)
      const sample = SAMPLE_BODIES[endpoint]
      const withBody = sample === undefined ? {} : {body: JSON.stringify(sample)}
      const call = (options: RequestOptions) =>
        daemon.request(path(), {method, ...withBody, ...options, headers: {'content-type': 'application/json', ...options.headers}})

      const unauthenticated: Array<[string, () => RequestOptions]> = [
        ['no Authorization header', () => ({customerId: tenant.customer.id})],
        ['a Basic Authorization header', () => ({customerId: tenant.customer.id, headers: {authorization: 'Basic dXNlcjpwYXNz'}})],
        ['"Bearer" with no token', () => ({customerId: tenant.customer.id, headers: {authorization: 'Bearer'}})],
        ['a malformed token', () => ({token: 'svc_123', customerId: tenant.customer.id})],
        ['an unknown token', () => ({token: mintToken(), customerId: tenant.customer.id})],
        ['a revoked token', () => ({token: tokens.revoked, customerId: tenant.customer.id})],
        ['an expired token', () => ({token: tokens.expired, customerId: tenant.customer.id})],
        ['a token retired by rotation', () => ({token: tokens.rotatedOut, customerId: tenant.customer.id})],
        ['no x-customer-id', () => ({token: tenant.token})],
        ['a malformed x-customer-id', () => ({token: tenant.token, customerId: 'acme'})],
      ]
      for (const [label, options] of unauthenticated) {
        it(`${endpoint} with ${label} is 401 authentication_error`, async function () {
          const response = await call(options())
          expect(response.status).to.equal(401)
          expect(response.body.error).to.include({type: 'authentication_error', code: 401})
          expect(response.body.error.message).to.be.a('string').and.not.equal('')
        })
      }

      it(`${endpoint} with another customer's id is 403 authorization_error`, async function () {
        for (const customerId of [other.customer.id, randomUUID()]) {
          const response = await call({token: tenant.token, customerId})
          expect(response.status).to.equal(403)
          expect(response.body.error).to.include({type: 'authorization_error', code: 403})
          expect(response.body.error.message).to.match(/locked to another customer/)
        }
      })

      it(`${endpoint} without ${ENDPOINT_SCOPES[endpoint]} is 403 authorization_error naming the scope`, async function () {
        const scopes = SCOPES.filter((scope) => scope !== ENDPOINT_SCOPES[endpoint])
        const {token} = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes})
        const response = await call({token, customerId: tenant.customer.id})
        expect(response.status).to.equal(403)
        expect(response.body.error).to.include({type: 'authorization_error', code: 403})
        expect(response.body.error.message).to.include(ENDPOINT_SCOPES[endpoint])
      })

      if (sample !== undefined) {
        it(`${endpoint} without ${ENDPOINT_SCOPES[endpoint]} is 403 before its body is read: malformed, another type or too large`, async function () {
          const scopes = SCOPES.filter((scope) => scope !== ENDPOINT_SCOPES[endpoint])
          const {token} = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes})
          const bodies: RequestOptions[] = [
            {body: '{not json'},
            {body: 'contact_name=x', headers: {'content-type': 'application/x-www-form-urlencoded'}},
            {body: JSON.stringify({filler: 'x'.repeat(11 * 1024 * 1024)})},
          ]
          for (const options of bodies) {
            const response = await call({token, customerId: tenant.customer.id, ...options})
            expect(response.status, response.text).to.equal(403)
            expect(response.body.error).to.include({type: 'authorization_error', code: 403})
            expect(response.body.error.message).to.include(ENDPOINT_SCOPES[endpoint])
          }
        })
      }

      it(`${endpoint} with the right key, customer and scope is not refused`, async function () {
        const {token} = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: [ENDPOINT_SCOPES[endpoint]]})
        const response = await call({token, customerId: tenant.customer.id.toUpperCase()})
        expect(response.status, response.text).to.be.oneOf([200, 201, 202])
      })
    }

    it('stops accepting a key revoked while the daemon runs', async function () {
      const {token, key} = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: [...SCOPES]})
      expect((await daemon.request('/api/agents/crm/leads', {token, customerId: tenant.customer.id})).status).to.equal(200)
      await daemon.services.keys.revoke(key.id)
      expect((await daemon.request('/api/agents/crm/leads', {token, customerId: tenant.customer.id})).status).to.equal(401)
    })
  })
})
