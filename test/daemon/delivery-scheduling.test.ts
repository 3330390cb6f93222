import {expect} from 'chai'

import type {DeliveryWorker} from '../../src/deliveries/delivery-worker.js'
import {postJson} from '../helpers/api.js'
import {type Backend, forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
const ALLOW = {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
/** Answered by no one: the receiver holds the request until the test stops it. */
const NEVER = new Promise<void>(() => undefined)

/**
 * Creates `count` leads for the tenant, `parallel` at a time, through the daemon's write service
 * (the path behind POST /leads, its events included, without the HTTP round trips a backlog
 * does not need); returns their ids. 64 at a time fill the write service's groups of creates
 * (CREATE_GROUPS in create-writer.ts), so a backlog costs few transactions.
 */
async function createLeads(daemon: TestDaemon, tenant: TestTenant, count: number, parallel = 64): Promise<string[]> {
  const ids: string[] = []
  let next = 0
  await Promise.all(
    Array.from({length: parallel}, async () => {
      while (next < count) {
        const i = next++
        const created = await daemon.services.leadsWrite.create(tenant.customer.id, {contact_name: `Backlog ${i}`})
        expect(created.merged).to.equal(false)
        ids.push(created.lead.id)
      }
    }),
  )
  return ids
}

/** When each lead's first delivery reached the receiver. */
function arrivals(receiver: Receiver): Map<string, number> {
  const first = new Map<string, number>()
  for (const request of receiver.requests) {
    const leadId = (JSON.parse(request.rawBody.toString('utf8')) as {lead: {id: string}}).lead.id
    if (!first.has(leadId)) first.set(leadId, request.receivedAt)
  }
  return first
}

/** Creates leads one by one and returns, for each, the time from its 201 to its first attempt at the receiver. */
async function firstAttemptDelays(daemon: TestDaemon, tenant: TestTenant, receiver: Receiver, count: number): Promise<number[]> {
  const answered = new Map<string, number>()
  for (let i = 0; i < count; i++) {
    const response = await postJson(daemon, tenant, CREATE, {contact_name: `Healthy ${i}`})
    expect(response.status).to.equal(201)
    answered.set(response.body.lead.id, Date.now())
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await receiver.waitFor(count, 5000)
  const arrived = arrivals(receiver)
  return [...answered].map(([leadId, at]) => arrived.get(leadId)! - at)
}

describe('delivery scheduling across webhooks', function () {
  this.timeout(120_000)

  forEachBackend((backend: Backend) => {
    let daemon: TestDaemon
    let healthy: Receiver
    let neighbour: Receiver
    /** Tenants whose webhooks are deleted after each test, so their unfinished deliveries burden no later test. */
    const tenants: TestTenant[] = []
    const tenantWithWebhook = async (url: string) => {
      const tenant = await newTenant(daemon.services, undefined, {roomy: true})
      tenants.push(tenant)
      // The longest timeout: a dead receiver's first attempts stay open for the whole test, even on a
      // loaded machine, so what is on the wire is the cap's doing and never a timed-out attempt's retry.
      const {webhook} = await daemon.services.webhooks.create(tenant.customer.id, {url, event_types: ['lead.created'], timeout_seconds: 60})
      return {tenant, webhook}
    }

    beforeEach(async function () {
      healthy = await new Receiver().start()
      neighbour = await new Receiver().start()
      daemon = await startTestDaemon(backend, {worker: {baseDelayMs: 200, maxDelayMs: 400}}, ALLOW)
    })
    afterEach(async function () {
      for (const tenant of tenants.splice(0))
        for (const webhook of await daemon.services.webhooks.list(tenant.customer.id)) await daemon.services.webhooks.delete(tenant.customer.id, webhook.id)
      // The neighbour first: its held requests then end at once instead of running out their timeout in stop().
      await neighbour.stop()
      await daemon.stop()
      await healthy.stop()
    })

    for (const [kind, reply] of [
      ['a dead receiver (never answers)', {status: 200, until: NEVER}],
      ['a slow receiver (answers in 5 s)', {status: 200, delayMs: 5000}],
    ] as const) {
      it(`sends another webhook's first attempts within 1 s while ${kind} has a backlog of 1,000`, async function () {
        neighbour.fallback = reply
        const {tenant: noisy} = await tenantWithWebhook(neighbour.url)
        await createLeads(daemon, noisy, 1000)
        await neighbour.waitFor(8)

        const {tenant: quiet} = await tenantWithWebhook(healthy.url)
        const delays = await firstAttemptDelays(daemon, quiet, healthy, 20)
        expect(Math.max(...delays), `201 -> first attempt, ms: ${delays.join(', ')}`).to.be.below(1000)
        // The neighbour never had more than its cap on the wire, and its backlog waits its turn, leased.
        expect(neighbour.mostOpen).to.equal(8)
        const unfinished = (await daemon
          .db('deliveries')
          .where({customer_id: noisy.customer.id})
          .whereIn('status', ['pending', 'delivering'])
          .count({n: '*'})) as Array<{n: number | string}>
        expect(Number(unfinished[0]!.n)).to.be.at.least(1000 - neighbour.requests.length)
      })
    }

    it('keeps a webhook at its in-flight cap with two workers sending', async function () {
      const second: DeliveryWorker = daemon.services.createWorker({workerId: 'second-worker', baseDelayMs: 200, maxDelayMs: 400})
      second.start()
      try {
        neighbour.fallback = {status: 200, delayMs: 75}
        const {tenant, webhook} = await tenantWithWebhook(neighbour.url)
        await daemon.services.webhooks.setMaxInFlight(webhook.id, 3)
        await createLeads(daemon, tenant, 40)
        await waitUntil(
          async () => {
            const statuses = (await daemon.db('deliveries').where({customer_id: tenant.customer.id}).select('status')) as Array<{status: string}>
            return statuses.every((row) => row.status === 'succeeded')
          },
          'every delivery to succeed',
          20_000,
        ).catch((error: Error) => {
          // What the workers warned about says why, should this ever stall.
          throw new Error(
            `${error.message}; ${neighbour.requests.length} requests arrived; warnings: ${daemon.logs
              .filter((line) => /"level":[45]0/.test(line))
              .join('')
              .slice(0, 2000)}`,
          )
        })
        expect(neighbour.mostOpen).to.equal(3)
        // Each sent once: the cap never cost a delivery an attempt, and no two workers sent the same one.
        expect(neighbour.requests).to.have.length(40)
        const deliveries = (await daemon.db('deliveries').where({customer_id: tenant.customer.id}).select('id')) as Array<{id: string}>
        expect((await daemon.services.deliveries.list({webhookId: webhook.id, limit: 100})).flatMap((delivery) => delivery.attempts)).to.have.length(40)
        expect(deliveries).to.have.length(40)
      } finally {
        await second.stop()
      }
    })

    it('leaves the deliveries a live worker holds to that worker when another one sweeps', async function () {
      neighbour.fallback = {status: 200, until: NEVER}
      const {tenant} = await tenantWithWebhook(neighbour.url)
      await createLeads(daemon, tenant, 50)
      await neighbour.waitFor(8)
      const holders = async () =>
        (await daemon.db('deliveries').where({customer_id: tenant.customer.id}).select('claimed_by', 'status')) as Array<{
          claimed_by: string | null
          status: string
        }>
      await waitUntil(async () => (await holders()).every((row) => row.status === 'delivering'), 'the worker to hold every delivery')
      const [owner] = new Set((await holders()).map((row) => row.claimed_by))
      await daemon.services.createWorker({workerId: 'sweeping-worker'}).sweep()
      expect([...new Set((await holders()).map((row) => row.claimed_by))]).to.deep.equal([owner])
      expect(neighbour.requests).to.have.length(8)
    })
  })
})

describe("a worker's slots across customers", function () {
  this.timeout(120_000)

  forEachBackend((backend: Backend) => {
    let daemon: TestDaemon
    let healthy: Receiver
    let neighbour: Receiver
    const tenants: TestTenant[] = []

    beforeEach(async function () {
      healthy = await new Receiver().start()
      neighbour = await new Receiver().start()
      neighbour.fallback = {status: 200, until: NEVER}
      daemon = await startTestDaemon(backend, {worker: {baseDelayMs: 200, maxDelayMs: 400, concurrency: 16}}, ALLOW)
    })
    afterEach(async function () {
      for (const tenant of tenants.splice(0))
        for (const webhook of await daemon.services.webhooks.list(tenant.customer.id)) await daemon.services.webhooks.delete(tenant.customer.id, webhook.id)
      await neighbour.stop()
      await daemon.stop()
      await healthy.stop()
    })

    /**
     * Once the hanging attempts hold the three quarters of the slots (12 of 16) and no more, a
     * customer with nothing on the wire gets each of its first attempts out within a second.
     */
    const expectQuietCustomerServed = async () => {
      await neighbour.waitFor(12)
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(neighbour.mostOpen, 'the hanging attempts on the wire').to.equal(12)
      const quiet = await newTenant(daemon.services, undefined, {roomy: true})
      tenants.push(quiet)
      await daemon.services.webhooks.create(quiet.customer.id, {url: healthy.url, event_types: ['lead.created'], timeout_seconds: 60})
      const delays = await firstAttemptDelays(daemon, quiet, healthy, 5)
      expect(Math.max(...delays), `201 -> first attempt, ms: ${delays.join(', ')}`).to.be.below(1000)
    }

    it("keeps a share of them from a customer whose webhooks hang, for another customer's first attempts", async function () {
      // Three webhooks that never answer, at 8 in flight each, could hold all 16 of the worker's
      // slots for their 60 s timeout; the worker keeps a quarter of them for other customers.
      const noisy = await newTenant(daemon.services, undefined, {roomy: true})
      tenants.push(noisy)
      for (const path of ['a', 'b', 'c']) {
        await daemon.services.webhooks.create(noisy.customer.id, {url: `${neighbour.url}/${path}`, event_types: ['lead.created'], timeout_seconds: 60})
      }
      await createLeads(daemon, noisy, 20)
      await expectQuietCustomerServed()
    })

    it("keeps the reserve from several customers whose webhooks hang, for another customer's first attempts", async function () {
      // Two customers' webhooks that never answer, at 8 in flight each, would hold all 16 slots
      // if each customer could always take its 8: the reserve goes only to customers with nothing on the wire.
      for (const path of ['a', 'b']) {
        const noisy = await newTenant(daemon.services, undefined, {roomy: true})
        tenants.push(noisy)
        await daemon.services.webhooks.create(noisy.customer.id, {url: `${neighbour.url}/${path}`, event_types: ['lead.created'], timeout_seconds: 60})
        await createLeads(daemon, noisy, 10)
      }
      await expectQuietCustomerServed()
    })
  })
})

describe('the per-webhook circuit breaker', function () {
  this.timeout(60_000)

  forEachBackend((backend: Backend) => {
    it('opens after a run of failures, holds the rest without spending attempts, probes with one, and closes on a success', async function () {
      const receiver = await new Receiver().start()
      receiver.fallback = {status: 503}
      const daemon = await startTestDaemon(
        backend,
        {worker: {baseDelayMs: 1500, maxDelayMs: 1500, breaker: {failureThreshold: 3, cooldownMs: 400, maxCooldownMs: 400}}},
        ALLOW,
      )
      try {
        const tenant = await newTenant(daemon.services, undefined, {roomy: true})
        const {webhook} = await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 5})
        // One at a time, so the order of attempts is the test's to know.
        await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhook.id}).update({max_in_flight: 1})
        const breaker = async () => (await daemon.services.webhooks.getById(webhook.id)).breaker
        const attemptsMade = async () =>
          ((await daemon.db('deliveries').where({customer_id: tenant.customer.id}).select('attempts_made')) as Array<{attempts_made: number}>)
            .map((row) => Number(row.attempts_made))
            .sort()

        await createLeads(daemon, tenant, 6, 1)
        await waitUntil(async () => (await breaker()).state !== 'closed', 'the breaker to open')
        expect(receiver.requests).to.have.length(3)
        expect(await attemptsMade()).to.deep.equal([0, 0, 0, 1, 1, 1])
        const opened = await breaker()
        expect(opened.state).to.equal('open')
        expect(opened.until! - opened.openedAt!).to.equal(400)

        // After the cool-down one delivery probes; it fails, so the breaker opens again.
        await receiver.waitFor(4, 5000)
        await new Promise((resolve) => setTimeout(resolve, 150))
        expect(receiver.requests).to.have.length(4)
        expect((await breaker()).state).to.equal('open')

        receiver.fallback = {status: 200, body: 'back'}
        await waitUntil(async () => (await attemptsMade()).every((made) => made > 0), 'every delivery to be attempted')
        expect((await breaker()).state).to.equal('closed')
        await waitUntil(async () => {
          const statuses = (await daemon.db('deliveries').where({customer_id: tenant.customer.id}).select('status')) as Array<{status: string}>
          return statuses.every((row) => row.status === 'succeeded')
        }, 'every delivery to succeed')
        // Held deliveries spent no attempt: three failed in the run, one probe failed, then one each.
        const total = (await attemptsMade()).reduce((sum, made) => sum + made, 0)
        expect(total).to.equal(6 + 4)
      } finally {
        await daemon.stop()
        await receiver.stop()
      }
    })
  })
})
