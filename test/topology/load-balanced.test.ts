import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'
import mysql from 'mysql2/promise'

import {type DaemonProcess, spawnDaemon} from '../../bench/daemon-process.js'
import {loadConfig} from '../../src/config/config.js'
import {createServices, type Services} from '../../src/services.js'
import {getFrom} from '../helpers/api.js'
import {TEST_MASTER_KEY} from '../helpers/backends.js'
import {type Balancer, startHaproxy} from '../helpers/haproxy.js'
import {freePort, killRedis, startRedis, waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'

/**
 * Past one machine, on loopback: three `--role api` daemons behind HAProxy, two `--role worker`
 * daemons, one MariaDB (a database of the test's own), one Redis (a redis-server of the test's
 * own) and an HTTPS receiver. Every daemon is its own process, as in production.
 */
const LEADS = '/api/agents/crm/leads'
const CREATES = 5000
const CLIENTS = 32
/** After this many creates one API daemon and one worker are killed with SIGKILL. */
const KILL_AT = 2000

const mysqlUrl = process.env['LEADS_TEST_MYSQL_URL']

describe('many daemons behind a load balancer (HAProxy, MariaDB, Redis)', function () {
  this.timeout(600_000)

  let dir: string
  let database: string
  let databaseUrl: string
  let redis: Awaited<ReturnType<typeof startRedis>>
  let env: Record<string, string>
  let services: Services
  let receiver: Receiver
  const apiPorts: number[] = []
  const apis: DaemonProcess[] = []
  const workers: DaemonProcess[] = []
  let balancer: Balancer
  let customerId: string

  before(async function () {
    if (!mysqlUrl) throw new Error('the topology suite needs LEADS_TEST_MYSQL_URL (MariaDB or MySQL)')
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-topology-'))
    database = `leads_topology_${process.pid}`
    const admin = await mysql.createConnection({uri: mysqlUrl})
    await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4`)
    await admin.end()
    const url = new URL(mysqlUrl)
    url.pathname = `/${database}`
    databaseUrl = url.toString()
    const redisPort = await freePort()
    redis = await startRedis(redisPort)
    env = {
      LEADS_DATABASE_URL: databaseUrl,
      LEADS_REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
      LEADS_MASTER_KEY: TEST_MASTER_KEY,
      LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
      // The balancer connects from 127.0.0.1; clients come from 127.0.0.2 and up.
      LEADS_TRUSTED_PROXIES: '127.0.0.1',
      LEADS_METRICS: '1',
      LEADS_LOG_LEVEL: 'warn',
    }
    services = await createServices(loadConfig(env), {autoMigrate: true})
    receiver = await new Receiver().start()
    const customer = await services.customers.create({name: 'Topology Realty'})
    customerId = customer.id
    await services.rateLimits.set({type: 'customer', id: customerId}, {perMinute: 100_000, perHour: 1_000_000, bulkPerMinute: 1000})
    await services.webhooks.create(customerId, {url: receiver.url, event_types: ['lead.created'], timeout_seconds: 5})

    for (let i = 0; i < 3; i++) apiPorts.push(await freePort())
    apis.push(...(await Promise.all(apiPorts.map((port) => spawnDaemon(env, 'api', port)))))
    workers.push(...(await Promise.all([spawnDaemon(env, 'worker'), spawnDaemon(env, 'worker')])))
    balancer = await startHaproxy(dir, apiPorts)
  })

  after(async function () {
    await balancer?.stop()
    await Promise.all([...apis, ...workers].map((daemon) => daemon.stop()))
    await receiver?.stop()
    await services?.close()
    if (redis) await killRedis(redis)
    if (mysqlUrl && database) {
      const admin = await mysql.createConnection({uri: mysqlUrl})
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``)
      await admin.end()
    }
    if (dir) fs.rmSync(dir, {recursive: true, force: true})
  })

  async function issueKey(): Promise<{id: string; token: string}> {
    const {key, token} = await services.keys.issue({customerId, scopes: ['public_api:leads:read', 'public_api:leads:write']})
    return {id: key.id, token}
  }

  it(`stores ${CREATES} creates from ${CLIENTS} clients once each and delivers every lead.created, with an API daemon and a worker killed mid-run`, async function () {
    const {token} = await issueKey()
    const headers = {authorization: `Bearer ${token}`, 'x-customer-id': customerId, 'content-type': 'application/json'}
    const leadIds = new Map<number, string>()
    const createdAt = new Map<string, number>()
    let next = 0
    let retries = 0
    let killedAt = 0
    const started = performance.now()
    let beforeKillMs = 0

    // Each create carries its own Idempotency-Key; a client retries with it after a lost
    // connection, a 5xx from a dying daemon or a 409 (the first attempt still in flight).
    async function create(index: number): Promise<string> {
      const body = JSON.stringify({contact_name: `Person ${index}`, contact_email: `person${index}@example.org`})
      for (let attempt = 0; attempt < 200; attempt++) {
        try {
          const response = await fetch(balancer.url + LEADS, {method: 'POST', headers: {...headers, 'idempotency-key': `topology-${index}`}, body})
          const text = await response.text()
          if (response.status === 201) return (JSON.parse(text) as {lead: {id: string}}).lead.id
          if (response.status < 500 && response.status !== 409) throw new Error(`create ${index}: ${response.status} ${text}`)
        } catch (error) {
          if ((error as Error).message.startsWith(`create ${index}:`)) throw error
        }
        retries++
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      throw new Error(`create ${index} failed 200 times`)
    }

    async function client(): Promise<void> {
      for (;;) {
        const index = next++
        if (index >= CREATES) return
        if (index === KILL_AT) {
          beforeKillMs = performance.now() - started
          killedAt = Date.now()
          apis[1]!.child.kill('SIGKILL')
          workers[0]!.child.kill('SIGKILL')
        }
        const id = await create(index)
        leadIds.set(index, id)
        createdAt.set(id, Date.now())
      }
    }
    await Promise.all(Array.from({length: CLIENTS}, client))
    const elapsedMs = performance.now() - started
    const perDaemon = await balancer.stats()

    // Every lead stored once.
    const ids = [...leadIds.values()]
    expect(new Set(ids).size).to.equal(CREATES)
    const db = await mysql.createConnection({uri: databaseUrl})
    try {
      const [[leads]] = (await db.query('SELECT COUNT(*) AS n, COUNT(DISTINCT contact_email) AS people FROM leads WHERE customer_id = ?', [
        customerId,
      ])) as unknown as [[{n: number; people: number}]]
      expect({leads: Number(leads.n), people: Number(leads.people)}).to.deep.equal({leads: CREATES, people: CREATES})
      const [[events]] = (await db.query(`SELECT COUNT(*) AS n FROM events WHERE customer_id = ? AND type = 'lead.created'`, [customerId])) as unknown as [
        [{n: number}],
      ]
      expect(Number(events.n)).to.equal(CREATES)

      // Every lead.created arrives; the dead worker's leases run out (30 s after its last heartbeat) and the other worker sends them.
      const arrived = () => new Set(receiver.requests.map((request) => (JSON.parse(request.rawBody.toString('utf8')) as {lead: {id: string}}).lead.id))
      await waitUntil(() => arrived().size >= CREATES, `${CREATES} distinct lead.created deliveries (have ${arrived().size})`, 120_000)
      expect([...arrived()].sort()).to.deep.equal([...ids].sort())
      const [[pending]] = (await db.query(`SELECT COUNT(*) AS n FROM deliveries WHERE customer_id = ? AND status <> 'succeeded'`, [customerId])) as unknown as [
        [{n: number}],
      ]
      await waitUntil(
        async () => {
          const [[row]] = (await db.query(`SELECT COUNT(*) AS n FROM deliveries WHERE customer_id = ? AND status <> 'succeeded'`, [customerId])) as unknown as [
            [{n: number}],
          ]
          return Number(row.n) === 0
        },
        `every delivery recorded as succeeded (${pending.n} not yet)`,
        30_000,
      )
    } finally {
      await db.end()
    }

    const deliveryIds = receiver.requests.map((request) => String(request.headers['x-service-delivery']))
    const duplicates = deliveryIds.length - new Set(deliveryIds).size
    const lags = receiver.requests
      .map(
        (request) => request.receivedAt - (createdAt.get((JSON.parse(request.rawBody.toString('utf8')) as {lead: {id: string}}).lead.id) ?? request.receivedAt),
      )
      .sort((a, b) => a - b)
    const lastArrival = Math.max(...receiver.requests.map((request) => request.receivedAt))
    console.log(
      [
        `      ${CREATES} creates in ${(elapsedMs / 1000).toFixed(1)} s through the balancer: ${((CREATES * 1000) / elapsedMs).toFixed(0)}/s overall, ${((KILL_AT * 1000) / beforeKillMs).toFixed(0)}/s with three API daemons (before the kill); ${retries} client retries`,
        `      requests per daemon (HAProxy): ${perDaemon.map((server) => `${server.server} ${server.requests} (${server.status})`).join(', ')}`,
        `      lead.created: ${new Set(deliveryIds).size} deliveries, ${duplicates} duplicate attempts by delivery id; 201 → arrival p50 ${lags[Math.floor(lags.length / 2)]} ms, p99 ${lags[Math.floor(lags.length * 0.99)]} ms; the last arrived ${((lastArrival - killedAt) / 1000).toFixed(0)} s after the kill`,
      ].join('\n'),
    )
  })

  it('restarts the killed API daemon, which the balancer takes back into rotation', async function () {
    apis[1] = await spawnDaemon(env, 'api', apiPorts[1])
    await waitUntil(async () => (await balancer.stats()).every((server) => server.status === 'UP'), 'all three daemons UP at the balancer', 15_000)
  })

  it('gives a key limited to 60 a minute exactly 60 successes across the three daemons', async function () {
    const key = await issueKey()
    await services.rateLimits.set({type: 'key', id: key.id}, {perMinute: 60})
    const before = await balancer.stats()
    const statuses: number[] = []
    // 90 requests, 6 at a time, round robin over the three daemons.
    for (let batch = 0; batch < 15; batch++) {
      statuses.push(
        ...(await Promise.all(
          Array.from(
            {length: 6},
            async () => (await fetch(`${balancer.url}${LEADS}?limit=1`, {headers: {authorization: `Bearer ${key.token}`, 'x-customer-id': customerId}})).status,
          ),
        )),
      )
    }
    const after = await balancer.stats()
    expect(
      after.map((server, i) => server.requests - before[i]!.requests).every((served) => served >= 20),
      'each daemon served a share',
    ).to.equal(true)
    expect(statuses.filter((status) => status === 200)).to.have.length(60)
    expect(statuses.filter((status) => status === 429)).to.have.length(30)
  })

  it('refuses a revoked key on all three daemons within 5 s', async function () {
    const key = await issueKey()
    const direct = (port: number) =>
      fetch(`http://127.0.0.1:${port}${LEADS}?limit=1`, {headers: {authorization: `Bearer ${key.token}`, 'x-customer-id': customerId}}).then(
        (response) => response.status,
      )
    // Each daemon has the key cached as valid.
    for (const port of apiPorts) expect(await direct(port)).to.equal(200)
    const revokedAt = Date.now()
    await services.keys.revoke(key.id)
    const refusedAfter = await Promise.all(
      apiPorts.map(async (port) => {
        await waitUntil(async () => (await direct(port)) === 401, `daemon on ${port} to refuse the revoked key`, 5_000)
        return Date.now() - revokedAt
      }),
    )
    console.log(`      revoked key refused by the three daemons after ${refusedAfter.join(', ')} ms`)
    expect(Math.max(...refusedAfter)).to.be.at.most(5_000)
  })

  it('applies a rate-limit override on all three daemons within 10 s', async function () {
    const key = await issueKey()
    const limit = (port: number) =>
      fetch(`http://127.0.0.1:${port}${LEADS}?limit=1`, {headers: {authorization: `Bearer ${key.token}`, 'x-customer-id': customerId}}).then((response) =>
        response.headers.get('ratelimit-limit'),
      )
    // The customer's override applies (100,000 a minute) until the key's own arrives.
    for (const port of apiPorts) expect(await limit(port)).to.equal('100000')
    const changedAt = Date.now()
    await services.rateLimits.set({type: 'key', id: key.id}, {perMinute: 500})
    const appliedAfter = await Promise.all(
      apiPorts.map(async (port) => {
        await waitUntil(async () => (await limit(port)) === '500', `daemon on ${port} to apply the override`, 10_000)
        return Date.now() - changedAt
      }),
    )
    console.log(`      rate-limit override applied by the three daemons after ${appliedAfter.join(', ')} ms`)
    expect(Math.max(...appliedAfter)).to.be.at.most(10_000)
  })

  it('counts unauthenticated clients by their own address through the balancer, whatever X-Forwarded-For they write', async function () {
    const guess = {authorization: `Bearer svc_${'0'.repeat(64)}`, 'x-customer-id': customerId}
    // 100 guesses a minute per address: one client spends its budget, spoofing a new address each time.
    for (let i = 0; i < 100; i++) expect(await getFrom('127.0.0.2', balancer.url + LEADS, {...guess, 'x-forwarded-for': `198.51.100.${i}`})).to.equal(401)
    // A daemon that saw the address under budget may believe that for a second (rate-limit-redis.test.ts).
    await new Promise((resolve) => setTimeout(resolve, 1100))
    for (let i = 0; i < 3; i++)
      expect(await getFrom('127.0.0.2', balancer.url + LEADS, {...guess, 'x-forwarded-for': `203.0.113.${i}`}), 'the spender, on every daemon').to.equal(429)
    // Another client behind the same balancer has its own budget.
    for (let i = 0; i < 3; i++) expect(await getFrom('127.0.0.3', balancer.url + LEADS, guess), 'another client').to.equal(401)
  })
})
