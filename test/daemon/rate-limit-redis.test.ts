import type {ChildProcess} from 'node:child_process'
import {randomUUID} from 'node:crypto'

import {expect} from 'chai'
import {createClient} from 'redis'

import {getFrom} from '../helpers/api.js'
import {backends, describeInMysqlRun, describeWithTestRedis} from '../helpers/backends.js'
import {newTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {freePort, killRedis, startRedis, waitUntil} from '../helpers/local-servers.js'

const LIST = '/api/agents/crm/leads'
const sqlite = () => backends()[0]!

describeWithTestRedis('rate limits on Redis', function (redisUrl) {
  it('enforces one budget per key across two daemons', async function () {
    const prefix = `test:${randomUUID()}`
    const first = await startTestDaemon(sqlite(), {rateLimitKeyPrefix: prefix}, {LEADS_REDIS_URL: redisUrl})
    const second = await startTestDaemon(sqlite(), {rateLimitKeyPrefix: prefix}, {LEADS_REDIS_URL: redisUrl})
    try {
      const tenant = await newTenant(first.services)
      const statuses: number[] = []
      for (let i = 0; i < 61; i++) {
        const daemon = i % 2 === 0 ? first : second
        statuses.push((await daemon.request(LIST, {token: tenant.token, customerId: tenant.customer.id})).status)
      }
      expect(statuses.slice(0, 60).every((status) => status === 200)).to.equal(true)
      expect(statuses[60]).to.equal(429)
      expect((await first.request(LIST, {token: tenant.token, customerId: tenant.customer.id})).status).to.equal(429)
    } finally {
      await first.stop()
      await second.stop()
    }
  })
})

describeWithTestRedis('the keyless budget of an address on Redis', function (redisUrl) {
  it('is refused by a daemon within a second of another daemon seeing it spent, after at most one token lookup there', async function () {
    const prefix = `test:${randomUUID()}`
    const first = await startTestDaemon(sqlite(), {rateLimitKeyPrefix: prefix}, {LEADS_REDIS_URL: redisUrl})
    const second = await startTestDaemon(sqlite(), {rateLimitKeyPrefix: prefix}, {LEADS_REDIS_URL: redisUrl})
    try {
      const tenant = await newTenant(first.services)
      const valid = {token: tenant.token, customerId: tenant.customer.id}
      const guess = {token: `svc_${'0'.repeat(64)}`, customerId: tenant.customer.id}
      let lookups = 0
      const authenticator = second.services.keyAuthenticator
      const authenticate = authenticator.authenticate.bind(authenticator)
      authenticator.authenticate = (token: string) => {
        lookups++
        return authenticate(token)
      }
      // The second daemon has just seen the address under its budget (and keeps that for a second).
      expect((await second.request(LIST, valid)).status).to.equal(200)
      for (let i = 0; i < 100; i++) expect((await first.request(LIST, guess)).status).to.equal(401)
      lookups = 0
      // At most one guess is looked up there; counting it, that daemon learns the budget is spent.
      expect((await second.request(LIST, guess)).status).to.equal(429)
      expect((await second.request(LIST, guess)).status).to.equal(429)
      expect(lookups).to.be.at.most(1)

      // Without a guess there to count, the second daemon asks Redis again after a second.
      const other = {authorization: `Bearer ${tenant.token}`, 'x-customer-id': tenant.customer.id}
      expect(await getFrom('127.0.0.2', second.url + LIST, other)).to.equal(200)
      const spend = {authorization: `Bearer ${guess.token}`, 'x-customer-id': tenant.customer.id}
      for (let i = 0; i < 100; i++) expect(await getFrom('127.0.0.2', first.url + LIST, spend)).to.equal(401)
      await new Promise((resolve) => setTimeout(resolve, 1100))
      expect(await getFrom('127.0.0.2', second.url + LIST, other)).to.equal(429)
    } finally {
      await first.stop()
      await second.stop()
    }
  })
})

describeInMysqlRun('rate limits when Redis goes away @fault', function () {
  let port: number
  let redis: ChildProcess
  let daemon: TestDaemon

  before(async function () {
    port = await freePort()
    redis = await startRedis(port)
    daemon = await startTestDaemon(sqlite(), {lookup: async () => [{address: '93.184.216.34', family: 4}]}, {LEADS_REDIS_URL: `redis://127.0.0.1:${port}`})
  })
  after(async function () {
    await daemon.stop()
    redis.kill('SIGKILL')
  })

  it('keeps serving with a logged warning, counting per daemon, and shares counts again once Redis is back', async function () {
    const tenant = await newTenant(daemon.services)
    const call = () => daemon.request(LIST, {token: tenant.token, customerId: tenant.customer.id})
    expect((await call()).status).to.equal(200)

    await killRedis(redis)
    await waitUntil(() => daemon.services.redis?.isReady === false, 'the daemon to notice Redis is gone')
    for (let i = 0; i < 3; i++) {
      const response = await call()
      expect(response.status).to.equal(200)
      expect(response.headers.get('ratelimit-limit')).to.equal('60')
      expect(response.headers.get('ratelimit-remaining')).to.match(/^\d+$/)
    }
    expect(daemon.logs.join('')).to.include('redis unreachable: rate limits are counted per daemon until it returns')
    // A create whose delivery cannot be enqueued still answers at once; the sweeper sends it later.
    await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://hooks.example.com/outage', event_types: ['lead.created']})
    const created = await fetch(`${daemon.url}/api/agents/crm/leads`, {
      method: 'POST',
      headers: {authorization: `Bearer ${tenant.token}`, 'x-customer-id': tenant.customer.id, 'content-type': 'application/json'},
      body: JSON.stringify({contact_name: 'During the outage'}),
      signal: AbortSignal.timeout(3000),
    })
    expect(created.status).to.equal(201)
    expect(daemon.logs.join('')).to.include('redis enqueue failed; deliveries are dispatched by this process and the sweeper until it works')
    expect((await daemon.request('/readyz')).status).to.equal(503)

    redis = await startRedis(port)
    await waitUntil(() => daemon.services.redis?.isReady === true, 'the daemon to reconnect')
    await call()
    await call()
    const direct = createClient({url: `redis://127.0.0.1:${port}`})
    await direct.connect()
    const keys = await direct.keys('*:minute:*')
    expect(keys).to.have.length(1)
    expect(await direct.get(keys[0]!)).to.equal('2')
    await direct.close()
    expect((await daemon.request('/readyz')).status).to.equal(200)
  })
})
