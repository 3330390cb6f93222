import {Ajv} from 'ajv'
import addFormatsModule from 'ajv-formats'
import {randomBytes} from 'node:crypto'

import {expect} from 'chai'
import nock from 'nock'

import {LEASE_MS} from '../../src/deliveries/delivery-claims.js'
import type {DeliveryWorker} from '../../src/deliveries/delivery-worker.js'
import {mintWebhookSecret, SecretBox} from '../../src/webhooks/secret-box.js'
import {postJson} from '../helpers/api.js'
import {backends, flushRedisOf, forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {type Json, resolveRefs} from '../helpers/openapi.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {verifyDelivery} from '../helpers/verify-signature.js'

const CREATE = '/api/agents/crm/leads'
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default
const WORKER = {baseDelayMs: 5, maxDelayMs: 20, sweepIntervalMs: 100, redispatchAfterMs: 200}

async function until<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe('webhook delivery', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let receiver: Receiver
    let tenant: TestTenant
    let secret: string
    let webhookId: string

    const delivery = (id: string) => daemon.services.deliveries.show(id)
    const finished = (id: string) =>
      until(async () => {
        const found = await delivery(id)
        return ['succeeded', 'failed', 'cancelled'].includes(found.status) && found
      }, `delivery ${id} to finish`)
    const deliveryIdsOf = async (leadId: string) =>
      (
        (await daemon
          .db('deliveries')
          .join('events', 'events.id', 'deliveries.event_id')
          .where({'deliveries.customer_id': tenant.customer.id, 'events.customer_id': tenant.customer.id, 'events.lead_id': leadId})
          .select('deliveries.id')) as Array<{id: string}>
      ).map((row) => row.id)

    before(async function () {
      receiver = await new Receiver().start()
      daemon = await startTestDaemon(backend, {worker: WORKER}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
    })
    beforeEach(async function () {
      receiver.requests.length = 0
      receiver.fallback = {status: 200, body: 'ok'}
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      const created = await daemon.services.webhooks.create(tenant.customer.id, {
        url: receiver.url,
        event_types: ['lead.created'],
        retry_attempts: 3,
        timeout_seconds: 1,
      })
      secret = created.secret as string
      webhookId = created.webhook.id
    })
    after(async function () {
      await daemon.stop()
      await receiver.stop()
    })

    it('POSTs a signed lead.created that an independent verifier accepts', async function () {
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Ada', contact_email: 'ada@example.org', custom_fields: {lead_line: 'buyer'}})
      await receiver.waitFor(1)
      const [request] = receiver.requests
      expect(verifyDelivery(request!, secret)).to.equal(true)
      expect(verifyDelivery(request!, 'svc_whsec_' + '0'.repeat(64))).to.equal(false)
      expect(verifyDelivery(request!, secret, Date.now() + 301_000)).to.equal(false)
      expect(request!.headers['content-type']).to.equal('application/json')
      const body = JSON.parse(request!.rawBody.toString('utf8'))
      expect(body).to.have.keys(['event', 'delivered_at', 'lead'])
      expect(body.event).to.equal('lead.created')
      const lead = created.body.lead
      expect(body.lead).to.deep.equal({
        id: lead.id,
        contact_name: 'Ada',
        contact_phone: null,
        contact_email: 'ada@example.org',
        source_platform: 'direct',
        source_type: 'manual',
        lead_line: 'buyer',
        current_stage: {slug: 'new', name: 'New'},
        custom_fields: {lead_line: 'buyer'},
        created_at: lead.created_at,
        updated_at: lead.updated_at,
      })
      const [deliveryId] = await deliveryIdsOf(lead.id)
      expect(request!.headers['x-service-delivery']).to.equal(deliveryId)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('succeeded')
      expect(done.attempts).to.have.length(1)
      expect(done.attempts[0]).to.include({statusCode: 200, outcome: 'success', responseSnippet: 'ok', attemptNumber: 1})
    })

    it('sends X-Service-Signature, X-Service-Timestamp and X-Service-Delivery cased as the spec names them', async function () {
      await postJson(daemon, tenant, CREATE, {contact_name: 'Cased'})
      await receiver.waitFor(1)
      const names = receiver.requests[0]!.headerNames
      expect(names).to.include.members(['X-Service-Signature', 'X-Service-Timestamp', 'X-Service-Delivery'])
      expect(names.filter((name) => name.toLowerCase().startsWith('x-service-'))).to.have.length(3)
    })

    it('sends what the OpenAPI document states under webhooks: its body schema and its headers', async function () {
      await daemon.services.webhooks.update(tenant.customer.id, webhookId, {rotate_secret: true})
      await postJson(daemon, tenant, CREATE, {contact_name: 'Documented', contact_phone: '+1 555 010 9999', custom_fields: {lead_line: 'seller'}})
      await postJson(daemon, tenant, CREATE, {contact_email: 'plain@example.org'})
      await receiver.waitFor(2)
      const document = (await daemon.request('/openapi.json')).body as Json
      const event = document['webhooks']?.['lead.created']?.post
      expect(event, 'webhooks["lead.created"].post').to.be.an('object')
      const validate = addFormats(new Ajv({strict: false, allErrors: true})).compile(
        resolveRefs(event.requestBody.content['application/json'].schema, document) as Json,
      )
      const parameters = event.parameters as Array<{name: string; in: string; required: boolean; schema: {pattern?: string}}>
      for (const request of receiver.requests) {
        expect(validate(JSON.parse(request.rawBody.toString('utf8'))), JSON.stringify(validate.errors)).to.equal(true)
        const sent = request.headerNames.filter((name) => name.toLowerCase().startsWith('x-service-'))
        expect(sent).to.have.members(parameters.map((parameter) => parameter.name))
        for (const parameter of parameters) {
          expect(parameter.in).to.equal('header')
          const value = request.headers[parameter.name.toLowerCase()] as string
          if (parameter.schema.pattern) expect(value).to.match(new RegExp(parameter.schema.pattern))
        }
      }
      expect(parameters.filter((parameter) => parameter.required).map((parameter) => parameter.name)).to.have.members([
        'X-Service-Signature',
        'X-Service-Timestamp',
        'X-Service-Delivery',
      ])
    })

    it("fails alone the delivery of a webhook whose secret no longer opens (sealed under a lost master key), and sends the other webhooks' as usual", async function () {
      const lost = await daemon.services.webhooks.create(tenant.customer.id, {url: `${receiver.url}?sealed=lost`, event_types: ['lead.created']})
      await daemon
        .db('webhooks')
        .where({customer_id: tenant.customer.id, id: lost.webhook.id})
        .update({secret_ciphertext: new SecretBox(randomBytes(32)).seal(mintWebhookSecret())})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Two receivers'})
      const deliveries = await Promise.all((await deliveryIdsOf(created.body.lead.id)).map((id) => finished(id)))
      const byWebhook = new Map(deliveries.map((done) => [done.webhookId, done]))
      expect(byWebhook.get(webhookId)).to.include({status: 'succeeded'})
      const failed = byWebhook.get(lost.webhook.id)!
      expect(failed.status).to.equal('failed')
      expect(failed.lastError).to.equal(
        `the signing secret does not open with this LEADS_MASTER_KEY (it was sealed under another key): rotate it (leads webhooks rotate-secret ${lost.webhook.id}), then redeliver`,
      )
      expect(failed.attempts).to.deep.equal([])
      expect(receiver.requests.map((request) => request.headers['x-service-delivery'])).to.deep.equal([byWebhook.get(webhookId)!.id])
    })

    it('emits nothing for a merge or for bulk rows', async function () {
      const first = await postJson(daemon, tenant, CREATE, {contact_email: 'once@example.org'})
      await postJson(daemon, tenant, CREATE, {contact_email: 'ONCE@example.org', contact_name: 'merged'})
      await postJson(daemon, tenant, '/api/agents/crm/leads/bulk', {leads: [{contact_name: 'bulk one'}, {contact_name: 'bulk two'}]})
      const rows = await daemon.db('deliveries').where({customer_id: tenant.customer.id, webhook_id: webhookId})
      expect(rows).to.have.length(1)
      expect(await deliveryIdsOf(first.body.lead.id)).to.deep.equal([rows[0].id])
    })

    it('retries non-2xx answers with the same delivery id and a fresh signature each time', async function () {
      receiver.reply({status: 500}, {status: 503})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Retry'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('succeeded')
      expect(done.attempts.map((a) => [a.statusCode, a.outcome])).to.deep.equal([
        [500, 'retry'],
        [503, 'retry'],
        [200, 'success'],
      ])
      expect(receiver.requests.map((r) => r.headers['x-service-delivery'])).to.deep.equal([deliveryId, deliveryId, deliveryId])
      for (const request of receiver.requests) expect(verifyDelivery(request, secret)).to.equal(true)
      expect(new Set(receiver.requests.map((r) => r.rawBody.toString())).size).to.equal(3)
    })

    it('makes retry_attempts + 1 attempts, then marks the delivery failed and counts a failure', async function () {
      receiver.fallback = {status: 500, body: 'down'}
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Doomed'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('failed')
      expect(done.attempts).to.have.length(4)
      expect(done.attempts.map((attempt) => attempt.outcome)).to.deep.equal(['retry', 'retry', 'retry', 'final'])
      expect(done.lastError).to.equal('HTTP 500')
      // One log line per finished attempt, with its ids and answer, never the payload.
      const lines = daemon.logs
        .filter((line) => line.includes('"delivery attempt"') && line.includes(deliveryId!))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(lines.map((line) => [line['attempt'], line['status'], line['outcome']])).to.deep.equal([
        [1, 500, 'retry'],
        [2, 500, 'retry'],
        [3, 500, 'retry'],
        [4, 500, 'final'],
      ])
      expect(lines[0]).to.include({webhook_id: webhookId})
      expect(lines[0]!['duration_ms']).to.be.a('number')
      expect(lines.join('\n')).not.to.include('Doomed')
      expect(done.attempts[0]!.responseSnippet).to.equal('down')
      // The worker counts the failure against its webhook just after it marks the delivery failed.
      const webhook = await until(async () => {
        const found = await daemon.services.webhooks.getById(webhookId)
        return found.consecutiveFailures > 0 && found
      }, 'the failure to be counted')
      expect(webhook.consecutiveFailures).to.equal(1)
      expect(webhook.isActive).to.equal(true)
    })

    it('treats a redirect as terminal: one attempt, not followed', async function () {
      receiver.reply({status: 302, headers: {location: 'https://localhost:1/elsewhere'}})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Moved'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('failed')
      expect(done.attempts.map((a) => [a.statusCode, a.outcome])).to.deep.equal([[302, 'terminal']])
      expect(receiver.requests).to.have.length(1)
    })

    it('gives up on an attempt after timeout_seconds and retries it', async function () {
      receiver.reply({status: 200, delayMs: 1500})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Slow'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('succeeded')
      expect(done.attempts[0]).to.include({statusCode: null, outcome: 'retry'})
      expect(done.attempts[0]!.error).to.match(/no response within the timeout/)
      expect(done.attempts[0]!.durationMs).to.be.within(900, 1400)
    })

    it('retries a receiver that drops the connection without answering, and delivers on the next attempt', async function () {
      receiver.reply({status: 200, reset: true})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Reset'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('succeeded')
      expect(done.attempts.map((attempt) => attempt.outcome)).to.deep.equal(['retry', 'success'])
      expect(done.attempts[0]!.statusCode).to.equal(null)
      expect(done.attempts[0]!.error).to.match(/ECONNRESET|socket hang up/)
    })

    it('gives up on an answer that trickles in past timeout_seconds, and retries', async function () {
      // 200 at once, then its body a byte every 300 ms: the attempt's whole exchange counts against the 1 s timeout.
      receiver.reply({status: 200, body: 'slowly, slowly', trickleMs: 300})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Trickle'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('succeeded')
      expect(done.attempts.map((attempt) => attempt.outcome)).to.deep.equal(['retry', 'success'])
      expect(done.attempts[0]!.error).to.match(/no response within the timeout/)
      expect(done.attempts[0]!.durationMs).to.be.within(900, 1600)
    })

    it('redelivers a failed delivery with the same X-Service-Delivery and fresh attempts', async function () {
      receiver.fallback = {status: 500}
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Again'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      expect((await finished(deliveryId!)).status).to.equal('failed')
      receiver.fallback = {status: 204}
      receiver.requests.length = 0
      expect(await daemon.services.deliveries.redeliver([deliveryId!])).to.deep.equal([deliveryId])
      const done = await until(async () => {
        const found = await delivery(deliveryId!)
        return found.status === 'succeeded' && found
      }, 'redelivery')
      expect(receiver.requests[0]!.headers['x-service-delivery']).to.equal(deliveryId)
      expect(verifyDelivery(receiver.requests[0]!, secret)).to.equal(true)
      expect(done.attempts.at(-1)).to.include({statusCode: 204, outcome: 'success', attemptNumber: 5})
    })

    it('signs events after a rotation with the new secret, and sends none to a disabled or deleted webhook', async function () {
      const {secret: rotated} = await daemon.services.webhooks.update(tenant.customer.id, webhookId, {rotate_secret: true})
      await postJson(daemon, tenant, CREATE, {contact_name: 'Rotated'})
      await receiver.waitFor(1)
      expect(verifyDelivery(receiver.requests[0]!, rotated as string)).to.equal(true)
      expect(verifyDelivery(receiver.requests[0]!, secret)).to.equal(false)

      await daemon.services.webhooks.update(tenant.customer.id, webhookId, {is_active: false})
      const quiet = await postJson(daemon, tenant, CREATE, {contact_name: 'Quiet'})
      expect(await deliveryIdsOf(quiet.body.lead.id)).to.deep.equal([])
      await daemon.services.webhooks.delete(tenant.customer.id, webhookId)
      const gone = await postJson(daemon, tenant, CREATE, {contact_name: 'Gone'})
      expect(await deliveryIdsOf(gone.body.lead.id)).to.deep.equal([])
      expect(receiver.requests).to.have.length(1)
    })

    it('cancels pending deliveries when their webhook is deleted', async function () {
      receiver.fallback = {status: 500}
      const slow = await daemon.services.webhooks.update(tenant.customer.id, webhookId, {retry_attempts: 10})
      expect(slow.webhook.retryAttempts).to.equal(10)
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Cancelled'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      await receiver.waitFor(1)
      await daemon.services.webhooks.delete(tenant.customer.id, webhookId)
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('cancelled')
      expect(done.lastError).to.equal('webhook deleted')
    })

    it('disables a webhook whose deliveries have all failed for 5 days', async function () {
      receiver.fallback = {status: 500}
      await daemon.services.webhooks.update(tenant.customer.id, webhookId, {retry_attempts: 0})
      await daemon
        .db('webhooks')
        .where({customer_id: tenant.customer.id, id: webhookId})
        .update({failing_since: Date.now() - 5 * 86_400_000 - 1000, consecutive_failures: 40})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Last straw'})
      const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
      await finished(deliveryId!)
      // The delivery ends first; the failure is then counted on the webhook, which it disables.
      const webhook = await until(async () => {
        const found = await daemon.services.webhooks.getById(webhookId)
        return !found.isActive && found
      }, 'the webhook to be disabled')
      expect(webhook).to.include({isActive: false, disabledReason: 'every delivery failed for 5 days', consecutiveFailures: 41})
      const listed = await daemon.request('/api/agents/crm/lead-webhooks', {token: tenant.token, customerId: tenant.customer.id})
      expect(listed.body.webhooks[0].is_active).to.equal(false)
    })

    for (const how of ['the customer (PATCH is_active: true)', 'the operator (leads webhooks enable)']) {
      it(`counts the 5 days again from when ${how} enables a webhook it disabled`, async function () {
        receiver.fallback = {status: 500}
        await daemon.services.webhooks.update(tenant.customer.id, webhookId, {retry_attempts: 0})
        const failingSince = Date.now() - 5 * 86_400_000 - 1000
        await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).update({failing_since: failingSince, consecutive_failures: 40})
        const straw = await postJson(daemon, tenant, CREATE, {contact_name: 'Last straw'})
        await finished((await deliveryIdsOf(straw.body.lead.id))[0]!)
        await until(async () => !(await daemon.services.webhooks.getById(webhookId)).isActive, 'the webhook to be disabled')
        if (how.startsWith('the customer')) {
          const enabled = await daemon.request(`/api/agents/crm/lead-webhooks/${webhookId}`, {
            method: 'PATCH',
            token: tenant.token,
            customerId: tenant.customer.id,
            headers: {'content-type': 'application/json'},
            body: JSON.stringify({is_active: true}),
          })
          expect(enabled.status).to.equal(200)
          expect(enabled.body.webhook.is_active).to.equal(true)
        } else {
          await daemon.services.webhooks.setActive(webhookId, true)
        }
        // One delivery that fails right after the receiver came back is not five days of failures.
        const enabledAt = Date.now()
        const blip = await postJson(daemon, tenant, CREATE, {contact_name: 'One blip'})
        const [blipId] = await deliveryIdsOf(blip.body.lead.id)
        expect((await finished(blipId!)).status).to.equal('failed')
        const webhook = await until(async () => {
          const found = await daemon.services.webhooks.getById(webhookId)
          return (found.lastFailureAt ?? 0) >= enabledAt && found
        }, 'the failure to be counted')
        expect(webhook).to.include({isActive: true, disabledReason: null, consecutiveFailures: 1})
        expect(webhook.failingSince).to.be.above(failingSince + 5 * 86_400_000)
      })
    }

    it('never lets two workers deliver the same attempt', async function () {
      receiver.reply({status: 200, delayMs: 200})
      const second = daemon.services.createWorker({workerId: 'second-worker', ...WORKER})
      await daemon.services.webhooks.update(tenant.customer.id, webhookId, {is_active: false})
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Contested'})
      expect(await deliveryIdsOf(created.body.lead.id)).to.deep.equal([])
      await daemon.services.webhooks.update(tenant.customer.id, webhookId, {is_active: true})
      const again = await postJson(daemon, tenant, CREATE, {contact_name: 'Contested 2'})
      const [deliveryId] = await deliveryIdsOf(again.body.lead.id)
      await Promise.all([second.process(deliveryId!), second.process(deliveryId!), daemon.worker!.process(deliveryId!)])
      const done = await finished(deliveryId!)
      expect(done.status).to.equal('succeeded')
      expect(done.attempts).to.have.length(1)
      expect(receiver.requests.filter((r) => r.headers['x-service-delivery'] === deliveryId)).to.have.length(1)
    })

    it('dispatches again a delivery the queue lost (crash between commit and enqueue, flushed Redis)', async function () {
      const apiOnly = await startTestDaemon(backend, {role: 'api'}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      try {
        const created = await postJson(apiOnly, tenant, CREATE, {contact_name: 'Lost'})
        const [deliveryId] = await deliveryIdsOf(created.body.lead.id)
        // Simulate the loss: the row is committed and marked dispatched, but no queue holds it.
        await flushRedisOf(backend)
        await until(async () => (await delivery(deliveryId!)).status === 'succeeded', 'the sweeper to re-dispatch')
        expect(receiver.requests.filter((r) => r.headers['x-service-delivery'] === deliveryId).length).to.be.at.least(1)
      } finally {
        await apiOnly.stop()
      }
    })
  })
})

describe('webhook delivery to a host whose DNS answer changes after registration', function () {
  it('blocks the attempt at connect time and fails the delivery without retrying', async function () {
    let answer = '93.184.216.34'
    const lookup = async () => [{address: answer, family: 4 as const}]
    const daemon = await startTestDaemon(backends()[0]!, {lookup, worker: {baseDelayMs: 5, maxDelayMs: 20}})
    // nock blocks non-loopback names before any lookup; let this one through to our guard.
    nock.enableNetConnect((host) => host.startsWith('rebind.example.com') || /^(127\.0\.0\.1|localhost)(:\d+)?$/.test(host))
    try {
      const tenant = await newTenant(daemon.services)
      await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://rebind.example.com/hook', event_types: ['lead.created'], retry_attempts: 3})
      answer = '127.0.0.1'
      const created = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Rebound'})
      const [row] = await daemon
        .db('deliveries')
        .join('events', 'events.id', 'deliveries.event_id')
        .where({'deliveries.customer_id': tenant.customer.id, 'events.customer_id': tenant.customer.id, 'events.lead_id': created.body.lead.id})
        .select('deliveries.id')
      let done = await daemon.services.deliveries.show(row.id)
      for (let i = 0; i < 200 && !['failed', 'succeeded'].includes(done.status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        done = await daemon.services.deliveries.show(row.id)
      }
      expect(done.status).to.equal('failed')
      expect(done.attempts).to.have.length(1)
      expect(done.attempts[0]).to.include({outcome: 'terminal', statusCode: null})
      expect(done.attempts[0]!.error).to.match(/no public address \(127\.0\.0\.1\)/)
    } finally {
      nock.disableNetConnect()
      nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\]|::1)(:\d+)?$/.test(host))
      await daemon.stop()
    }
  })
})

describe('stopping a delivery worker', function () {
  it('hands a delivery waiting out its backoff back to the pool, due at once', async function () {
    const receiver = await new Receiver().start()
    receiver.fallback = {status: 503}
    const api = await startTestDaemon(backends()[0]!, {role: 'api'}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
    try {
      const tenant = await newTenant(api.services)
      await api.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})
      const created = await postJson(api, tenant, '/api/agents/crm/leads', {contact_name: 'Interrupted'})
      const [row] = await api
        .db('deliveries')
        .join('events', 'events.id', 'deliveries.event_id')
        .where({'deliveries.customer_id': tenant.customer.id, 'events.customer_id': tenant.customer.id, 'events.lead_id': created.body.lead.id})
        .select('deliveries.id')
      // A long first backoff: the worker is stopped while it waits.
      const worker = api.services.createWorker({baseDelayMs: 60_000, maxDelayMs: 60_000})
      const processing = worker.process(row.id)
      await receiver.waitFor(1)
      const started = Date.now()
      await worker.stop()
      await processing
      expect(Date.now() - started).to.be.below(2000)
      const delivery = await api.services.deliveries.show(row.id)
      expect(delivery).to.include({status: 'pending', attemptsMade: 1})
      expect(delivery.nextAttemptAt).to.be.at.most(Date.now())
    } finally {
      await api.stop()
      await receiver.stop()
    }
  })
})

describe('delivery leases', function () {
  forEachBackend((backend) => {
    it('stay with a live worker through an attempt longer than two leases: its heartbeat renews them', async function () {
      const receiver = await new Receiver().start()
      const api = await startTestDaemon(backend, {role: 'api'}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      let worker: DeliveryWorker | null = null
      try {
        const tenant = await newTenant(api.services)
        await api.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], timeout_seconds: 10})
        const created = await postJson(api, tenant, CREATE, {contact_name: 'Slow receiver'})
        const customerId = tenant.customer.id
        const [row] = await api
          .db('deliveries')
          .join('events', 'events.id', 'deliveries.event_id')
          .where({'deliveries.customer_id': customerId, 'events.customer_id': customerId, 'events.lead_id': created.body.lead.id})
          .select('deliveries.id')
        const leaseOf = async () => Number((await api.db('deliveries').where({customer_id: customerId, id: row.id}).first('claimed_until')).claimed_until)

        // The worker's clock starts after the delivery was written, so the delivery is due on it.
        const clock = new ManualClock(Date.now())
        worker = api.services.createWorker({clock, heartbeatMs: 20, baseDelayMs: 5, maxDelayMs: 20})
        // The receiver answers once the test has seen the leases renewed: the attempt is on the wire until then.
        let answer!: () => void
        receiver.reply({status: 200, until: new Promise<void>((resolve) => (answer = resolve))})
        worker.start()
        await receiver.waitFor(1)
        // Two lease lengths pass on the worker's clock during the one attempt; heartbeats keep the lease ahead.
        for (let step = 0; step < 2; step++) {
          clock.advance(LEASE_MS)
          await until(async () => (await leaseOf()) > clock.now(), 'the heartbeat to renew the lease')
        }
        // A sweep on the same clock leaves the renewed lease alone.
        await api.services.createWorker({clock}).sweep()
        expect(await api.services.deliveries.show(row.id)).to.include({status: 'delivering'})
        expect(await leaseOf()).to.be.above(clock.now())
        answer()
        const done = await until(async () => {
          const found = await api.services.deliveries.show(row.id)
          return found.status === 'succeeded' && found
        }, 'the delivery to succeed')
        expect(done.status).to.equal('succeeded')
        expect(done.attempts).to.have.length(1)
        expect(receiver.requests).to.have.length(1)
      } finally {
        await worker?.stop()
        await api.stop()
        await receiver.stop()
      }
    })
  })
})
