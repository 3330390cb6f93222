import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {RECOVER_WINDOW_MS} from '../../src/deliveries/recover.js'
import {postJson} from '../helpers/api.js'
import {flushRedisOf, forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'
import {verifyDelivery} from '../helpers/verify-signature.js'

const HOOKS = '/api/agents/crm/lead-webhooks'
const WORKER = {baseDelayMs: 5, maxDelayMs: 20, sweepIntervalMs: 100, redispatchAfterMs: 200}
const HOUR = 3_600_000

function recover(daemon: TestDaemon, as: TestTenant, webhookId: string, body: unknown, token = as.token): Promise<TestResponse> {
  return daemon.request(`${HOOKS}/${webhookId}/recover`, {
    method: 'POST',
    token,
    customerId: as.customer.id,
    headers: {'content-type': 'application/json'},
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
}

function expectRateLimitHeaders(response: TestResponse): void {
  for (const header of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) expect(response.headers.get(header), header).to.match(/^\d+$/)
}

interface DeliveryRow {
  id: string
  status: string
  attempts_made: number | string
  created_at: number | string
  updated_at: number | string
}

describe('recovering failed deliveries (POST /lead-webhooks/{id}/recover)', function () {
  forEachBackend((backend) => {
    describe('with a worker delivering', function () {
      let daemon: TestDaemon
      let receiver: Receiver

      const rowsOf = async (tenant: TestTenant, webhookId: string): Promise<DeliveryRow[]> =>
        daemon
          .db('deliveries')
          .where({customer_id: tenant.customer.id, webhook_id: webhookId})
          .orderBy('id')
          .select('id', 'status', 'attempts_made', 'created_at', 'updated_at')
      const webhookOf = async (tenant: TestTenant) =>
        daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0, timeout_seconds: 2})
      /** Creates leads while the receiver answers 500, and waits until every delivery of the customer has failed. */
      const failLeads = async (tenant: TestTenant, count: number, webhooks: number) => {
        receiver.fallback = {status: 500, body: 'down'}
        for (let i = 0; i < count; i++) expect((await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: `Lost ${i}`})).status).to.equal(201)
        let seen: Array<{status: string; attempts_made: number; last_error: string | null}> = []
        await waitUntil(
          async () => {
            seen = await daemon.db('deliveries').where({customer_id: tenant.customer.id}).select('status', 'attempts_made', 'last_error')
            return seen.length === count * webhooks && seen.every((row) => row.status === 'failed')
          },
          `${count * webhooks} failed deliveries`,
          20_000,
        ).catch((error: Error) => {
          // Says what the deliveries were doing and what the worker logged, so a slow run explains itself.
          const warnings = daemon.logs.filter((line) => /"level":(40|50)/.test(line)).slice(-5)
          throw new Error(`${error.message}; seen ${JSON.stringify(seen)}; worker warnings: ${warnings.join(' ') || 'none'}`)
        })
      }
      const moveCreatedAt = (tenant: TestTenant, id: string, createdAt: number) =>
        daemon.db('deliveries').where({customer_id: tenant.customer.id, id}).update({created_at: createdAt})

      before(async function () {
        receiver = await new Receiver().start()
        daemon = await startTestDaemon(backend, {worker: WORKER}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      })
      beforeEach(function () {
        receiver.requests.length = 0
      })
      after(async function () {
        await daemon.stop()
        await receiver.stop()
      })

      it("queues again only the asking customer's failed deliveries of that webhook created since the time, which then arrive signed with their own ids", async function () {
        this.timeout(60_000)
        const alice = await newTenant(daemon.services, undefined, {roomy: true})
        const bob = await newTenant(daemon.services, undefined, {roomy: true})
        const target = await webhookOf(alice)
        const sibling = await webhookOf(alice)
        const bobs = await webhookOf(bob)
        await failLeads(alice, 4, 2)
        await failLeads(bob, 2, 1)

        const now = Date.now()
        const since = now - HOUR
        const [before, atSince, after, succeeded] = await rowsOf(alice, target.webhook.id)
        await moveCreatedAt(alice, before!.id, since - 1)
        await moveCreatedAt(alice, atSince!.id, since)
        await moveCreatedAt(alice, after!.id, now - HOUR / 2)
        await daemon.db('deliveries').where({customer_id: alice.customer.id, id: succeeded!.id}).update({status: 'succeeded'})
        const untouched = {
          target: (await rowsOf(alice, target.webhook.id)).filter((row) => row.id !== atSince!.id && row.id !== after!.id),
          sibling: await rowsOf(alice, sibling.webhook.id),
          bobs: await rowsOf(bob, bobs.webhook.id),
        }

        receiver.requests.length = 0
        receiver.fallback = {status: 204}
        const response = await recover(daemon, alice, target.webhook.id, {since: new Date(since).toISOString()})
        expect(response.status, response.text).to.equal(202)
        expect(response.body).to.deep.equal({queued: 2})
        expect(response.headers.get('content-type')).to.match(/^application\/json/)
        expectRateLimitHeaders(response)

        await receiver.waitFor(2)
        const arrived = receiver.requests.map((request) => request.headers['x-service-delivery'])
        expect(arrived.sort()).to.deep.equal([atSince!.id, after!.id].sort())
        for (const request of receiver.requests) expect(verifyDelivery(request, target.secret!)).to.equal(true)
        await waitUntil(
          async () => (await rowsOf(alice, target.webhook.id)).filter((row) => row.status === 'succeeded').length === 3,
          'the recovered deliveries to succeed',
        )
        // Fresh attempts: one attempt on record since the reset, where the failure had used the only one allowed.
        for (const id of [atSince!.id, after!.id])
          expect(await daemon.services.deliveries.show(id)).to.include({status: 'succeeded', attemptsMade: 1, lastError: null})

        expect((await rowsOf(alice, target.webhook.id)).filter((row) => row.id !== atSince!.id && row.id !== after!.id)).to.deep.equal(untouched.target)
        expect(await rowsOf(alice, sibling.webhook.id)).to.deep.equal(untouched.sibling)
        expect(await rowsOf(bob, bobs.webhook.id)).to.deep.equal(untouched.bobs)
        expect(receiver.requests).to.have.length(2)

        // Nothing failed is left since then: a second recover queues nothing.
        const again = await recover(daemon, alice, target.webhook.id, {since: new Date(since).toISOString()})
        expect(again.status).to.equal(202)
        expect(again.body).to.deep.equal({queued: 0})
      })

      it("answers 404 for another customer's webhook and for an unknown one, and queues nothing", async function () {
        const alice = await newTenant(daemon.services)
        const bob = await newTenant(daemon.services)
        const bobs = await webhookOf(bob)
        await failLeads(bob, 1, 1)
        const since = new Date(Date.now() - HOUR).toISOString()
        for (const id of [bobs.webhook.id, 'wh_000000000000000000000000', 'not-a-webhook']) {
          const response = await recover(daemon, alice, id, {since})
          expect(response.status, id).to.equal(404)
          expect(response.body.error).to.include({type: 'not_found_error', code: 404})
          expect(response.body.error.message).to.include(id)
          expectRateLimitHeaders(response)
        }
        expect((await rowsOf(bob, bobs.webhook.id)).map((row) => row.status)).to.deep.equal(['failed'])
      })

      it('refuses a key without public_api:webhooks:manage with 403', async function () {
        const alice = await newTenant(daemon.services)
        const {webhook} = await webhookOf(alice)
        const {token} = await daemon.services.keys.issue({customerId: alice.customer.id, scopes: ['public_api:leads:read', 'public_api:leads:write']})
        const response = await recover(daemon, alice, webhook.id, {since: new Date(Date.now() - HOUR).toISOString()}, token)
        expect(response.status).to.equal(403)
        expect(response.body.error).to.include({type: 'authorization_error', code: 403})
        expect(response.body.error.message).to.include('public_api:webhooks:manage')
        expectRateLimitHeaders(response)
      })

      const ago = (ms: number) => new Date(Date.now() - ms).toISOString()
      const badBodies: Array<[string, () => unknown, string, RegExp]> = [
        ['no body', () => undefined, 'since', /"since"/],
        ['an empty object', () => ({}), 'since', /"since"/],
        ['a number', () => ({since: Date.now() - HOUR}), 'since', /RFC 3339 date-time/],
        ['words', () => ({since: 'yesterday'}), 'since', /RFC 3339 date-time/],
        ['an hour 25', () => ({since: '2026-11-24T25:00:00Z'}), 'since', /RFC 3339 date-time/],
        ['a time without its offset', () => ({since: '2026-11-24T09:00:00'}), 'since', /RFC 3339 date-time/],
        ['an array body', () => [ago(HOUR)], 'body', /^Request body must be a JSON object\.$/],
        ['a time 7 days and a minute ago', () => ({since: ago(RECOVER_WINDOW_MS + 60_000)}), 'since', /at most 7 days ago/],
        ['a time in the future', () => ({since: new Date(Date.now() + HOUR).toISOString()}), 'since', /not be in the future/],
        ['an unknown field', () => ({since: ago(HOUR), status: 'failed'}), 'status', /unknown field "status"/],
      ]
      for (const [label, body, param, message] of badBodies) {
        it(`answers ${label} with 400 naming ${param}`, async function () {
          const alice = await newTenant(daemon.services)
          const {webhook} = await webhookOf(alice)
          await failLeads(alice, 1, 1)
          const response = await recover(daemon, alice, webhook.id, body())
          expect(response.status, response.text).to.equal(400)
          expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param})
          expect(response.body.error.message).to.match(message)
          expectRateLimitHeaders(response)
          expect((await rowsOf(alice, webhook.id)).map((row) => row.status)).to.deep.equal(['failed'])
        })
      }

      it('accepts a time just inside the 7 days', async function () {
        const alice = await newTenant(daemon.services)
        const {webhook} = await webhookOf(alice)
        await failLeads(alice, 1, 1)
        const [row] = await rowsOf(alice, webhook.id)
        await moveCreatedAt(alice, row!.id, Date.now() - RECOVER_WINDOW_MS + 90_000)
        receiver.fallback = {status: 204}
        const response = await recover(daemon, alice, webhook.id, {since: ago(RECOVER_WINDOW_MS - 60_000)})
        expect(response.status, response.text).to.equal(202)
        expect(response.body).to.deep.equal({queued: 1})
        await receiver.waitFor(1)
        expect(receiver.requests[0]!.headers['x-service-delivery']).to.equal(row!.id)
      })

      it('answers 409 for a disabled webhook, whose deliveries would only be cancelled', async function () {
        const alice = await newTenant(daemon.services)
        const {webhook} = await webhookOf(alice)
        await failLeads(alice, 1, 1)
        await daemon.services.webhooks.update(alice.customer.id, webhook.id, {is_active: false})
        const since = ago(HOUR)
        const byCustomer = await recover(daemon, alice, webhook.id, {since})
        expect(byCustomer.status).to.equal(409)
        expect(byCustomer.body.error).to.include({type: 'invalid_request_error', code: 409})
        expect(byCustomer.body.error.message).to.equal(
          `webhook ${webhook.id} is disabled, and a disabled webhook's deliveries are cancelled, not sent: enable it first (PATCH it with is_active: true), then recover`,
        )
        expectRateLimitHeaders(byCustomer)
        await daemon.services.webhooks.setActive(webhook.id, false)
        const byOperator = await recover(daemon, alice, webhook.id, {since})
        expect(byOperator.status).to.equal(409)
        expect(byOperator.body.error.message).to.match(/only the service operator can enable it again$/)
        expect((await rowsOf(alice, webhook.id)).map((row) => row.status)).to.deep.equal(['failed'])
      })
    })

    describe('with more failed deliveries than one page holds', function () {
      // An API-only daemon: nothing sends the deliveries this queues; `after` removes them.
      let daemon: TestDaemon
      let alice: TestTenant
      let bob: TestTenant

      before(async function () {
        daemon = await startTestDaemon(backend, {role: 'api'}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
        alice = await newTenant(daemon.services)
        bob = await newTenant(daemon.services)
      })
      after(async function () {
        for (const tenant of [alice, bob]) await daemon.db('deliveries').where({customer_id: tenant.customer.id}).delete()
        await daemon.stop()
        // With Redis the queued ids sit in the stream: no later suite's worker should have to take them.
        await flushRedisOf(backend)
      })

      it('queues every one of 10,050 failed deliveries, walking them page by page', async function () {
        this.timeout(120_000)
        const {webhook} = await daemon.services.webhooks.create(alice.customer.id, {url: 'https://localhost:9/unused', event_types: ['lead.created']})
        const {webhook: bobs} = await daemon.services.webhooks.create(bob.customer.id, {url: 'https://localhost:9/unused', event_types: ['lead.created']})
        const now = Date.now()
        const since = now - 6 * 24 * HOUR
        // Seven deliveries share each created_at, so pages of 500 end inside a run of equal times.
        const failedSince = Array.from({length: 10_050}, (_, i) => ({
          customerId: alice.customer.id,
          webhookId: webhook.id,
          status: 'failed',
          createdAt: since + Math.floor(i / 7) * 1000,
        }))
        const others = [
          ...Array.from({length: 30}, (_, i) => ({customerId: alice.customer.id, webhookId: webhook.id, status: 'failed', createdAt: since - 1 - i})),
          ...Array.from({length: 20}, (_, i) => ({customerId: alice.customer.id, webhookId: webhook.id, status: 'succeeded', createdAt: since + i})),
          ...Array.from({length: 40}, (_, i) => ({customerId: bob.customer.id, webhookId: bobs.id, status: 'failed', createdAt: since + i})),
        ]
        await insertDeliveries(daemon, [...failedSince, ...others], now)

        const response = await recover(daemon, alice, webhook.id, {since: new Date(since).toISOString()})
        expect(response.status, response.text).to.equal(202)
        expect(response.body).to.deep.equal({queued: 10_050})

        const statuses = async (customerId: string, webhookId: string) =>
          Object.fromEntries(
            (
              (await daemon
                .db('deliveries')
                .where({customer_id: customerId, webhook_id: webhookId})
                .groupBy('status')
                .select('status', daemon.db.raw('count(*) as n'))) as Array<{status: string; n: number | string}>
            ).map((row) => [row.status, Number(row.n)]),
          )
        expect(await statuses(alice.customer.id, webhook.id)).to.deep.equal({pending: 10_050, failed: 30, succeeded: 20})
        const [stillFailed] = (await daemon
          .db('deliveries')
          .where({customer_id: alice.customer.id, webhook_id: webhook.id, status: 'failed'})
          .andWhere('created_at', '>=', since)
          .count({n: '*'})) as Array<{n: number | string}>
        expect(Number(stillFailed!.n)).to.equal(0)
        expect(await statuses(bob.customer.id, bobs.id)).to.deep.equal({failed: 40})
      })
    })
  })
})

/** Writes delivery rows straight into the outbox (each with an event id of its own, never sent). */
async function insertDeliveries(
  daemon: TestDaemon,
  rows: ReadonlyArray<{customerId: string; webhookId: string; status: string; createdAt: number}>,
  now: number,
): Promise<void> {
  const records = rows.map((row) => ({
    id: randomUUID(),
    customer_id: row.customerId,
    webhook_id: row.webhookId,
    event_id: randomUUID(),
    status: row.status,
    attempts_made: 1,
    next_attempt_at: row.createdAt,
    created_at: row.createdAt,
    updated_at: now,
    completed_at: row.status === 'pending' ? null : now,
  }))
  for (let start = 0; start < records.length; start += 250) await daemon.db('deliveries').insert(records.slice(start, start + 250))
}
