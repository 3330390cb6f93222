import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../src/config/config.js'
import {createDb} from '../../src/db/knex.js'
import {migrateLatest} from '../../src/db/migrate.js'
import {type Backend, describeInMysqlRun, TEST_MASTER_KEY} from '../helpers/backends.js'
import {newTenant} from '../helpers/fixtures.js'
import {freePort, killMariadb, type OwnMariadb, startMariadb} from '../helpers/local-servers.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

/**
 * MariaDB crashes (SIGKILL) and comes back during a stream of creates, on a throwaway mariadbd of
 * this test's own (its own port and data directory; never the shared server). Afterwards every
 * 2xx lead is stored with its event and delivery, and the clients' retries with their
 * Idempotency-Keys complete the rest exactly once.
 */
describeInMysqlRun('MariaDB restarted during a stream of creates @fault', function () {
  this.timeout(120_000)
  let datadir: string
  let server: OwnMariadb
  let port: number
  let daemon: TestDaemon

  before(async function () {
    datadir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-mariadb-'))
    port = await freePort()
    server = await startMariadb(datadir, port)
    const admin = createDb({client: 'mysql', url: `${server.url}/mysql`})
    await admin.raw('CREATE DATABASE leads CHARACTER SET utf8mb4')
    await admin.destroy()
    const db = createDb({client: 'mysql', url: `${server.url}/leads`})
    await migrateLatest(db)
    await db.destroy()
  })
  after(async function () {
    await daemon?.stop().catch(() => undefined)
    await killMariadb(server)
    fs.rmSync(datadir, {recursive: true, force: true})
  })

  it('loses no lead, event or delivery, and a retry with the same keys writes each lead once', async function () {
    const env = {LEADS_DATABASE_URL: `${server.url}/leads`}
    const backend: Backend = {
      name: 'mysql',
      env,
      config: (extra = {}) => loadConfig({LEADS_MASTER_KEY: TEST_MASTER_KEY, LEADS_LOG_LEVEL: 'silent', ...env, ...extra}),
    }
    // No worker: the webhook only makes every create write its event and delivery.
    daemon = await startTestDaemon(backend, {role: 'api', lookup: async () => [{address: '93.184.216.34', family: 4}]})
    const tenant = await newTenant(daemon.services, undefined, {roomy: true})
    await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://93.184.216.34/hooks', event_types: ['lead.created']})

    const create = (i: number) =>
      daemon
        .request('/api/agents/crm/leads', {
          method: 'POST',
          token: tenant.token,
          customerId: tenant.customer.id,
          headers: {'content-type': 'application/json', 'idempotency-key': `stream-${i}`},
          body: JSON.stringify({contact_name: `Stream ${i}`, contact_email: `stream${i}@example.org`}),
        })
        .then(
          (response) => ({
            i,
            status: response.status,
            leadId: response.body?.lead?.id as string | undefined,
            body: response.body,
            retryAfter: response.headers.get('retry-after'),
          }),
          () => ({i, status: 0, leadId: undefined, body: null, retryAfter: null}),
        )

    // Eight clients send creates one after another; the database crashes a second in and comes back 2 s later.
    const outcomes: Array<Awaited<ReturnType<typeof create>>> = []
    let next = 0
    const stopAt = Date.now() + 6_000
    const crash = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      await killMariadb(server)
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      server = await startMariadb(datadir, port)
    })()
    await Promise.all(
      Array.from({length: 8}, async () => {
        while (Date.now() < stopAt) outcomes.push(await create(next++))
      }),
    )
    await crash

    const created = outcomes.filter((outcome) => outcome.status === 201)
    const refused = outcomes.filter((outcome) => outcome.status !== 201)
    expect(created.length, 'creates before the crash').to.be.above(8)
    expect(refused.length, 'creates refused while the database was down').to.be.above(0)
    // A refusal is a 503 with the envelope and Retry-After (or a dropped connection): never a 500, never a 2xx that was not stored.
    for (const outcome of refused) {
      if (outcome.status === 0) continue
      expect(outcome.status, JSON.stringify(outcome.body)).to.equal(503)
      expect(outcome.body?.error).to.include({type: 'api_error', code: 503})
      expect(outcome.retryAfter).to.equal('2')
    }
    // The daemon serves again once the database is back.
    const after = await create(next++)
    expect(after.status, JSON.stringify(after.body)).to.equal(201)
    created.push(after)

    const db = daemon.db
    const stored = (await db('leads').where({customer_id: tenant.customer.id}).pluck('id')) as string[]
    for (const outcome of created) expect(stored, `the 201 for create ${outcome.i}`).to.include(outcome.leadId)
    const count = async (table: string) =>
      Number(((await db(table).where({customer_id: tenant.customer.id}).count({n: '*'})) as Array<{n: number | string}>)[0]!.n)
    expect(await count('events'), 'events').to.equal(stored.length)
    expect(await count('deliveries'), 'deliveries').to.equal(stored.length)

    // The clients retry what got no 201, with the same keys: each lead is then stored once.
    const retried = await Promise.all(refused.map((outcome) => create(outcome.i)))
    expect(
      retried.filter((outcome) => outcome.status !== 201),
      'retries not answered 201',
    ).to.deep.equal([])
    expect(await count('leads')).to.equal(next)
    expect(await count('events')).to.equal(next)
    expect(await count('deliveries')).to.equal(next)
  })
})
