import {spawn} from 'node:child_process'

import {expect} from 'chai'

import {LEASE_MS} from '../../src/deliveries/delivery-claims.js'
import {postJson} from '../helpers/api.js'
import {backends, flushRedisOf, TEST_MASTER_KEY} from '../helpers/backends.js'
import {CLI} from '../helpers/cli.js'
import {newTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon} from '../helpers/test-daemon.js'

describe('at-least-once delivery when a worker dies', function () {
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
        const [row] = await api.services.db('deliveries').join('events', 'events.id', 'deliveries.event_id').where({'deliveries.customer_id': tenant.customer.id, 'events.customer_id': tenant.customer.id, 'events.lead_id': created.body.lead.id}).select('deliveries.id')
        const deliveryId = row.id as string
        // As if the enqueue never happened: the worker's sweeper must find the row itself.
        await api.services.db('deliveries').where({customer_id: tenant.customer.id, id: deliveryId}).update({dispatched_at: null})
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
