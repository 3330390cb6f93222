import {spawn} from 'node:child_process'

import {expect} from 'chai'

import {LEASE_MS} from '../../src/deliveries/delivery-claims.js'
import {postJson} from '../helpers/api.js'
import {backends, flushRedisOf, TEST_MASTER_KEY} from '../helpers/backends.js'
import {CLI} from '../helpers/cli.js'
import {newTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon} from '../helpers/test-daemon.js'

describe('at-least-once delivery when a worker dies @fault', function () {
  for (const backend of backends()) {
    it(`redelivers on ${backend.name} after the worker process is killed with SIGKILL mid-delivery`, async function () {
      const receiver = await new Receiver().start()
      const allowHosts = {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
      // An API-only daemon writes the lead and its delivery; no worker runs in this process.
      const api = await startTestDaemon(backend, {role: 'api'}, allowHosts)
      let child: ReturnType<typeof spawn> | null = null
      try {
        const tenant = await newTenant(api.services)
        await api.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], timeout_seconds: 30})
        const created = await postJson(api, tenant, '/api/agents/crm/leads', {contact_name: 'Survivor'})
        const [row] = await api
          .db('deliveries')
          .join('events', 'events.id', 'deliveries.event_id')
          .where({'deliveries.customer_id': tenant.customer.id, 'events.customer_id': tenant.customer.id, 'events.lead_id': created.body.lead.id})
          .select('deliveries.id')
        const deliveryId = row.id as string
        // As if the enqueue never happened: the worker's sweeper must find the row itself.
        await api.db('deliveries').where({customer_id: tenant.customer.id, id: deliveryId}).update({dispatched_at: null})
        await flushRedisOf(backend)

        // The first attempt hangs at the receiver, so the worker is mid-delivery when it dies.
        receiver.reply({status: 200, delayMs: 60_000})
        child = spawn(process.execPath, [CLI, 'daemon', '--role', 'worker'], {
          env: {...process.env, ...backend.env, ...allowHosts, LEADS_MASTER_KEY: TEST_MASTER_KEY, LEADS_LOG_LEVEL: 'warn', LEADS_PORT: '0'},
          stdio: 'ignore',
        })
        await receiver.waitFor(1, 15_000)
        expect(receiver.requests[0]!.headers['x-service-delivery']).to.equal(deliveryId)
        const exited = new Promise((resolve) => child!.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
        expect((await api.services.deliveries.show(deliveryId)).status).to.equal('delivering')

        // Another worker, its clock just past the dead worker's lease (it renewed it no later than its death), takes the delivery over.
        const clock = new ManualClock(Date.now() + LEASE_MS + 1000)
        const rescuer = api.services.createWorker({clock, baseDelayMs: 5, maxDelayMs: 20})
        // The sweep is global: deliveries other suites left pending may come along with ours.
        expect(await rescuer.sweep()).to.be.at.least(1)
        await rescuer.process(deliveryId)
        await rescuer.stop()
        const done = await api.services.deliveries.show(deliveryId)
        expect(done.status).to.equal('succeeded')
        expect(receiver.requests).to.have.length(2)
        expect(receiver.requests[1]!.headers['x-service-delivery']).to.equal(deliveryId)
      } finally {
        child?.kill('SIGKILL')
        await api.stop()
        await receiver.stop()
      }
    })
  }
})

describe('a webhook whose worker dies with attempts on the wire @fault', function () {
  for (const backend of backends()) {
    it(`takes new deliveries from another worker within seconds on ${backend.name}: the dead worker's in-flight slots lapse`, async function () {
      this.timeout(60_000)
      const receiver = await new Receiver().start()
      const allowHosts = {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
      const api = await startTestDaemon(backend, {role: 'api'}, allowHosts)
      let child: ReturnType<typeof spawn> | null = null
      let rescuer: ReturnType<typeof api.services.createWorker> | null = null
      try {
        const tenant = await newTenant(api.services, undefined, {roomy: true})
        await api.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], timeout_seconds: 30})
        // The first eight attempts hang at the receiver: the dying worker holds the webhook's whole cap.
        let answerAll!: () => void
        receiver.fallback = {status: 200, until: new Promise<void>((resolve) => (answerAll = resolve))}
        for (let i = 0; i < 8; i++) await postJson(api, tenant, '/api/agents/crm/leads', {contact_name: `Hung ${i}`})
        // As if never enqueued (on SQLite the API's queue is its own memory, which the worker's
        // process cannot read): the worker's first sweep takes all eight, rather than a sweep
        // after the redispatch delay.
        await api.db('deliveries').where({customer_id: tenant.customer.id}).update({dispatched_at: null})
        await flushRedisOf(backend)
        child = spawn(process.execPath, [CLI, 'daemon', '--role', 'worker'], {
          env: {...process.env, ...backend.env, ...allowHosts, LEADS_MASTER_KEY: TEST_MASTER_KEY, LEADS_LOG_LEVEL: 'warn', LEADS_PORT: '0'},
          stdio: 'ignore',
        })
        await receiver.waitFor(8, 15_000)
        const exited = new Promise((resolve) => child!.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
        const killedAt = Date.now()
        answerAll()
        receiver.fallback = {status: 200}

        rescuer = api.services.createWorker({workerId: 'rescuer'})
        rescuer.start()
        const created = await postJson(api, tenant, '/api/agents/crm/leads', {contact_name: 'After the crash'})
        const leadId = created.body.lead.id as string
        await waitUntil(
          () => receiver.requests.some((request) => (JSON.parse(request.rawBody.toString('utf8')) as {lead: {id: string}}).lead.id === leadId),
          'the new lead\u2019s delivery',
          20_000,
        )
        // The in-flight slots lapse 5 s after the dead worker's last renewal; the leases on its own deliveries take longer (30 s).
        expect(Date.now() - killedAt).to.be.below(8000)
      } finally {
        child?.kill('SIGKILL')
        await rescuer?.stop()
        await api.stop()
        await receiver.stop()
      }
    })
  }
})
