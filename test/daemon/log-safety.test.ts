import {Writable} from 'node:stream'

import {expect} from 'chai'

import {DeliveriesStore} from '../../src/deliveries/deliveries-store.js'
import {DeliverySweeper} from '../../src/deliveries/delivery-sweeper.js'
import {isMysql} from '../../src/db/knex.js'
import type {Db} from '../../src/db/knex.js'
import {createLogger} from '../../src/log/logger.js'
import {systemClock} from '../../src/shared/clock.js'
import {postJson} from '../helpers/api.js'
import {type Backend, forEachBackend, TEST_MASTER_KEY} from '../helpers/backends.js'
import {runCli} from '../helpers/cli.js'
import {newTenant} from '../helpers/fixtures.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon} from '../helpers/test-daemon.js'
import {waitUntil} from '../helpers/local-servers.js'

/** Values a failing statement carries; none may reach a log line or a CLI message. */
const EMAIL = 'leak.probe@example.org'
const PHONE = '+1 555 867 5309'

/**
 * A trigger that makes the database refuse a statement, so the error knex raises quotes the whole
 * statement with its values, as a real failure would (a deadlock, a full disk, a lost connection).
 */
async function refuse(db: Db, name: string, table: string, event: 'INSERT' | 'UPDATE', condition: string): Promise<void> {
  await db.raw(`DROP TRIGGER IF EXISTS ${name}`)
  if (isMysql(db)) {
    await db.raw(
      `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW BEGIN IF ${condition} THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the probe'; END IF; END`,
    )
  } else {
    await db.raw(`CREATE TRIGGER ${name} BEFORE ${event} ON ${table} WHEN ${condition} BEGIN SELECT RAISE(ABORT, 'refused by the probe'); END`)
  }
}

function capture(): {logs: string[]; sink: Writable} {
  const logs: string[] = []
  return {logs, sink: new Writable({write: (chunk: Buffer, _encoding, done) => (logs.push(chunk.toString('utf8')), done())})}
}

function expectClean(text: string, ...values: string[]): void {
  for (const value of [EMAIL, PHONE, ...values]) expect(text).to.not.include(value)
}

describe('errors in logs and messages hold no statement values', function () {
  forEachBackend((backend: Backend) => {
    it('on the HTTP path', async function () {
      const daemon = await startTestDaemon(backend)
      try {
        await refuse(daemon.db, 'probe_leads', 'leads', 'INSERT', `NEW.contact_email LIKE 'leak.probe%'`)
        const tenant = await newTenant(daemon.services)
        const response = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_email: EMAIL, contact_phone: PHONE})
        expect(response.status).to.equal(500)
        expectClean(response.text)
        const logs = daemon.logs.join('')
        expect(logs).to.include('unhandled error').and.to.include('refused by the probe')
        expectClean(logs)
      } finally {
        await daemon.db.raw('DROP TRIGGER IF EXISTS probe_leads')
        await daemon.stop()
      }
    })

    it('in the delivery worker', async function () {
      const receiver = await new Receiver().start()
      receiver.fallback = {status: 500, body: `${EMAIL} ${PHONE}`}
      const daemon = await startTestDaemon(backend, {worker: {baseDelayMs: 5, maxDelayMs: 20}}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      try {
        await refuse(daemon.db, 'probe_attempts', 'delivery_attempts', 'INSERT', `NEW.response_snippet LIKE '%leak.probe%'`)
        const tenant = await newTenant(daemon.services)
        await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0})
        expect((await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Worker path'})).status).to.equal(201)
        await waitUntil(() => daemon.logs.join('').includes('delivery attempt failed unexpectedly'), 'the worker to log the failure')
        const logs = daemon.logs.join('')
        expect(logs).to.include('refused by the probe')
        expectClean(logs)
      } finally {
        await daemon.db.raw('DROP TRIGGER IF EXISTS probe_attempts')
        await daemon.stop()
        await receiver.stop()
      }
    })

    it('in the sweeper', async function () {
      const daemon = await startTestDaemon(backend, {role: 'api'})
      const {logs, sink} = capture()
      const db = daemon.db
      const tenant = await newTenant(daemon.services)
      const deliveryId = '0badc0de-0000-4000-8000-000000000001'
      const sweeper = new DeliverySweeper(
        new DeliveriesStore(db).leases,
        {roomFor: () => 10, take: async () => undefined},
        systemClock,
        createLogger('info', sink),
        0,
      )
      try {
        await db('deliveries').insert({
          id: deliveryId,
          customer_id: tenant.customer.id,
          webhook_id: 'wh_probe',
          event_id: '0badc0de-0000-4000-8000-000000000002',
          status: 'delivering',
          attempts_made: 0,
          next_attempt_at: 0,
          dispatched_at: null,
          claimed_by: 'a dead worker',
          claimed_until: 0,
          created_at: 0,
          updated_at: 0,
        })
        // The sweep's first statement hands the dead worker's lease back: refused here.
        await refuse(db, 'probe_sweep', 'deliveries', 'UPDATE', "NEW.status = 'pending' AND OLD.status = 'delivering'")
        sweeper.start(10)
        await waitUntil(() => logs.join('').includes('delivery sweep failed'), 'the sweeper to log the failure')
        expect(logs.join('')).to.include('refused by the probe')
        expectClean(logs.join(''), deliveryId)
      } finally {
        sweeper.stop()
        await db.raw('DROP TRIGGER IF EXISTS probe_sweep')
        await db('deliveries').where({customer_id: tenant.customer.id, id: deliveryId}).delete()
        await daemon.stop()
      }
    })

    it('in a CLI command', async function () {
      const daemon = await startTestDaemon(backend, {role: 'api'})
      try {
        await refuse(daemon.db, 'probe_stages', 'stages', 'INSERT', `NEW.name LIKE 'leak.probe%'`)
        const tenant = await newTenant(daemon.services)
        const result = await runCli(['stages', 'add', '--customer', tenant.customer.id, '--slug', 'probe', '--name', `${EMAIL} ${PHONE}`], {
          ...backend.env,
          LEADS_MASTER_KEY: TEST_MASTER_KEY,
        })
        expect(result.code).to.equal(1)
        expect(result.stderr).to.include('unexpected failure: refused by the probe')
        expectClean(result.stdout + result.stderr)
      } finally {
        await daemon.db.raw('DROP TRIGGER IF EXISTS probe_stages')
        await daemon.stop()
      }
    })
  })
})
