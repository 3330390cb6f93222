import {expect} from 'chai'
import mysql from 'mysql2/promise'

import {loadConfig} from '../../src/config/config.js'
import {counts, postJson} from '../helpers/api.js'
import {type Backend, describeInMysqlRun, TEST_MASTER_KEY} from '../helpers/backends.js'
import {CuttingProxy} from '../helpers/cutting-proxy.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
/** A checked write's first round trip: it opens the transaction and does not commit. */
const FIRST_ROUND_TRIP = /^START TRANSACTION(?![\s\S]*COMMIT$)/
/** The batch that writes a lead and commits. */
const LEAD_COMMIT = /insert into `leads`[\s\S]*COMMIT$/i

/**
 * Connections to the database that break under a statement (a server that died, a balancer that
 * gave up on it, KILL CONNECTION), on the run's MariaDB: the daemon reaches it through a proxy of
 * the test's own that breaks a connection at a chosen statement. A write that had not reached
 * its COMMIT runs again on a fresh connection; one whose COMMIT went out is answered 503 and the
 * client's retry under the same Idempotency-Key gets the right answer; nothing is ever a 500.
 */
describeInMysqlRun('a database connection lost under a request', function () {
  const mysqlUrl = new URL(process.env['LEADS_TEST_MYSQL_URL']!)
  let proxy: CuttingProxy
  let daemon: TestDaemon
  let direct: mysql.Connection
  let tenant: TestTenant

  before(async function () {
    proxy = await new CuttingProxy({host: mysqlUrl.hostname, port: Number(mysqlUrl.port || 3306)}).start()
    const viaProxy = new URL(mysqlUrl)
    viaProxy.host = `127.0.0.1:${proxy.port}`
    const env: Record<string, string> = {LEADS_DATABASE_URL: viaProxy.toString()}
    const backend: Backend = {
      name: 'mysql',
      env,
      config: (extra = {}) => loadConfig({LEADS_MASTER_KEY: TEST_MASTER_KEY, LEADS_LOG_LEVEL: 'silent', ...env, ...extra}),
    }
    daemon = await startTestDaemon(backend, {role: 'api'})
    direct = await mysql.createConnection({uri: mysqlUrl.toString()})
  })
  beforeEach(async function () {
    tenant = await newTenant(daemon.services)
    proxy.cuts = 0
  })
  afterEach(function () {
    // A cut a failed test never reached must not fall on the next test.
    proxy.disarm()
  })
  after(async function () {
    await daemon?.stop()
    await direct?.end()
    await proxy?.stop()
  })

  const person = (name: string) => ({contact_name: name, contact_email: `${name.toLowerCase()}@example.org`})

  function expectUnavailable(response: TestResponse): void {
    expect(response.status, response.text).to.equal(503)
    expect(response.body.error).to.include({type: 'api_error', code: 503})
    expect(response.headers.get('retry-after')).to.equal('2')
  }

  async function storedLeadIds(): Promise<string[]> {
    const [rows] = (await direct.query('SELECT id FROM leads WHERE customer_id = ?', [tenant.customer.id])) as unknown as [Array<{id: string}>]
    return rows.map((row) => row.id)
  }

  it('writes a create whose connection broke before its COMMIT again on a fresh connection: 201, stored once', async function () {
    const cut = proxy.cutNext(FIRST_ROUND_TRIP, 'before')
    const response = await postJson(daemon, tenant, CREATE, person('Before'), 'before-commit')
    await cut.reached
    expect(response.status, response.text).to.equal(201)
    expect(proxy.cuts).to.equal(1)
    expect(await storedLeadIds()).to.deep.equal([response.body.lead.id])
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
  })

  it('answers 503 with Retry-After when the connection broke after the COMMIT went out, and the retry with the same key replays the stored create', async function () {
    const cut = proxy.cutNext(LEAD_COMMIT, 'after')
    const first = postJson(daemon, tenant, CREATE, person('Committed'), 'lost-answer')
    await cut.reached
    // The server commits; its answer never reaches the daemon.
    await waitUntil(async () => (await storedLeadIds()).length === 1, 'the create to commit')
    cut.finish()
    expectUnavailable(await first)
    const retry = await postJson(daemon, tenant, CREATE, person('Committed'), 'lost-answer')
    expect(retry.status, retry.text).to.equal(201)
    expect(retry.headers.get('idempotent-replayed')).to.equal('true')
    expect([retry.body.lead.id]).to.deep.equal(await storedLeadIds())
  })

  it('answers 503 when the COMMIT batch never reached the server, and the retry with the same key writes the create once', async function () {
    const cut = proxy.cutNext(LEAD_COMMIT, 'before')
    expectUnavailable(await postJson(daemon, tenant, CREATE, person('Unsent'), 'unsent-commit'))
    await cut.reached
    expect(await storedLeadIds()).to.deep.equal([])
    const retry = await postJson(daemon, tenant, CREATE, person('Unsent'), 'unsent-commit')
    expect(retry.status, retry.text).to.equal(201)
    expect(retry.headers.get('idempotent-replayed')).to.equal(null)
    expect(await storedLeadIds()).to.deep.equal([retry.body.lead.id])
  })

  it('answers a bulk request whose COMMIT was lost 503, and its retry with the same key once', async function () {
    const body = {leads: [person('BulkOne'), person('BulkTwo')]}
    // A bulk sends its rows ahead; its COMMIT goes alone once they are written.
    const cut = proxy.cutNext(/^COMMIT$/, 'after')
    const first = postJson(daemon, tenant, `${CREATE}/bulk`, body, 'bulk-lost')
    await cut.reached
    await waitUntil(async () => (await storedLeadIds()).length === 2, 'the bulk to commit')
    cut.finish()
    expectUnavailable(await first)
    const retry = await postJson(daemon, tenant, `${CREATE}/bulk`, body, 'bulk-lost')
    expect(retry.status, retry.text).to.equal(200)
    expect(retry.headers.get('idempotent-replayed')).to.equal('true')
    expect(retry.body.summary).to.include({created: 2})
    expect(await storedLeadIds()).to.have.length(2)
  })

  it('runs a transaction of its own again when its connection broke before the COMMIT (customer setup)', async function () {
    const cut = proxy.cutNext(/^insert into `stages`/i, 'before')
    const customer = await daemon.services.customers.create({name: 'Retried Realty'})
    await cut.reached
    expect(proxy.cuts).to.equal(1)
    const [rows] = (await direct.query('SELECT COUNT(*) AS n FROM stages WHERE customer_id = ?', [customer.id])) as unknown as [[{n: number}]]
    expect(Number(rows[0].n)).to.be.above(0)
    expect((await daemon.services.customers.listStages(customer.id)).length).to.equal(Number(rows[0].n))
  })

  it('answers a read whose connection broke 503 with Retry-After, never 500', async function () {
    const cut = proxy.cutNext(/select[\s\S]*from `leads`/i, 'before')
    const response = await daemon.request(`${CREATE}?limit=5`, {token: tenant.token, customerId: tenant.customer.id})
    await cut.reached
    expectUnavailable(response)
  })

  describe('KILL CONNECTION of the connection a create waits on', function () {
    const email = (name: string) => `e:${person(name).contact_email}`

    /** Holds the match key of `name` in a transaction of the test's own; the create then waits on it. */
    async function holdMatchKey(name: string): Promise<mysql.Connection> {
      const holder = await mysql.createConnection({uri: mysqlUrl.toString()})
      await holder.query('START TRANSACTION')
      await holder.query('INSERT INTO lead_match_locks (customer_id, match_key) VALUES (?, ?) ON DUPLICATE KEY UPDATE match_key = match_key', [
        tenant.customer.id,
        email(name),
      ])
      return holder
    }

    /** Kills the connection whose statement waits on the held key; its thread id. */
    async function killWaiter(holder: mysql.Connection): Promise<number> {
      const id = await waitUntil(async () => {
        const [rows] = (await direct.query(
          `SELECT id FROM information_schema.processlist WHERE info LIKE '%lead_match_locks%' AND id NOT IN (CONNECTION_ID(), ?)`,
          [holder.threadId],
        )) as unknown as [Array<{id: number}>]
        return rows[0]?.id
      }, 'the create to wait on the held match key')
      await direct.query(`KILL CONNECTION ${Number(id)}`)
      await holder.query('ROLLBACK')
      await holder.end()
      return id
    }

    it('writes the create again when the kill came before its COMMIT: 201, stored once', async function () {
      // The customer's first create is a checked write: the match key is locked in its first round trip.
      const holder = await holdMatchKey('Killed')
      const response = postJson(daemon, tenant, CREATE, person('Killed'), 'killed-early')
      await killWaiter(holder)
      const answered = await response
      expect(answered.status, answered.text).to.equal(201)
      expect(await storedLeadIds()).to.deep.equal([answered.body.lead.id])
    })

    it('answers 503 when the kill came in the batch with the COMMIT, and the retry with the same key writes the create once', async function () {
      // After the customer's first create, a create goes in one batch with its COMMIT (LEADS_CREATE_GUESS).
      expect((await postJson(daemon, tenant, CREATE, person('Earlier'))).status).to.equal(201)
      const holder = await holdMatchKey('KilledLate')
      const response = postJson(daemon, tenant, CREATE, person('KilledLate'), 'killed-late')
      await killWaiter(holder)
      expectUnavailable(await response)
      expect(await storedLeadIds()).to.have.length(1)
      const retry = await postJson(daemon, tenant, CREATE, person('KilledLate'), 'killed-late')
      expect(retry.status, retry.text).to.equal(201)
      expect(retry.headers.get('idempotent-replayed')).to.equal(null)
      expect(await storedLeadIds())
        .to.have.length(2)
        .and.include(retry.body.lead.id)
    })
  })

  it('answers 503 with Retry-After while the database cannot be reached, /readyz says why, and serves again once it can', async function () {
    proxy.refuse(true)
    await proxy.breakAll()
    try {
      const ready = await daemon.request('/readyz')
      expect(ready.status).to.equal(503)
      expect(ready.body.checks.database).to.equal(false)
      expect(ready.body.reasons[0]).to.match(/^database unreachable: /)
      const refused = await postJson(daemon, tenant, CREATE, person('Refused'), 'refused')
      expectUnavailable(refused)
      // Every response carries the RateLimit headers, this one too: its token could not be looked up.
      for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(refused.headers.get(header), header).to.match(/^\d+$/)
    } finally {
      proxy.refuse(false)
    }
    const retry = await postJson(daemon, tenant, CREATE, person('Refused'), 'refused')
    expect(retry.status, retry.text).to.equal(201)
    expect((await daemon.request('/readyz')).status).to.equal(200)
  })
})
