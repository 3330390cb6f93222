import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {CONSUMER_GROUP, STREAM_KEY} from '../../src/deliveries/redis-stream-queue.js'
import {postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {auditDeliveries, createAfterFailover, createDuring, reportFailover} from '../helpers/delivery-audit.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {command, RedisClusterUnderTest} from '../helpers/redis-topology.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
const WORKER = {baseDelayMs: 5, maxDelayMs: 20, sweepIntervalMs: 100, redispatchAfterMs: 1000}
// MariaDB (and its Redis-free config) when the run has one, else SQLite: the database is not what is tested here.
const backend = backends().at(-1)!

/**
 * The daemons on a real Redis Cluster of their own (three masters, one replica each, loopback):
 * the delivery stream and its consumer group, the shared rate-limit counters, and a master
 * killed in the middle of a stream of creates.
 */
describe(`Redis Cluster (3 masters + 3 replicas, on ${backend.name})`, function () {
  let cluster: RedisClusterUnderTest | null = null
  let receiver: Receiver
  const daemons: TestDaemon[] = []

  const start = async (role: 'api' | 'worker', rateLimitKeyPrefix?: string) => {
    const env = {LEADS_REDIS_URL: '', LEADS_REDIS_CLUSTER_NODES: cluster!.seedList, LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
    const daemon = await startTestDaemon(backend, {role, worker: WORKER, ...(rateLimitKeyPrefix ? {rateLimitKeyPrefix} : {})}, env)
    daemons.push(daemon)
    return daemon
  }
  const tenantWithWebhook = async (daemon: TestDaemon, roomy: boolean) => {
    const tenant = await newTenant(daemon.services, undefined, {roomy})
    await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})
    return tenant
  }
  /** The stream's consumer group as its master reports it. */
  const streamGroup = async () => {
    const master = await cluster!.masterOf(STREAM_KEY)
    // RESP3: one map per group.
    const groups = (await command(master.port, ['XINFO', 'GROUPS', STREAM_KEY])) as Array<Record<string, string | number | null>>
    const group = groups.find((fields) => fields['name'] === CONSUMER_GROUP)
    const [newest] = (await command(master.port, ['XREVRANGE', STREAM_KEY, '+', '-', 'COUNT', '1'])) as Array<[string, string[]]>
    return {master, group, newestEntry: newest?.[0] ?? null, length: Number(await command(master.port, ['XLEN', STREAM_KEY]))}
  }

  before(async function () {
    cluster = await RedisClusterUnderTest.start(3, 1)
    receiver = await new Receiver().start()
  })
  after(async function () {
    for (const daemon of daemons.splice(0)) await daemon.stop().catch(() => undefined)
    await receiver?.stop()
    await cluster?.stop()
  })

  it('dispatches through the stream and its consumer group on the cluster, and two daemons share one rate-limit budget', async function () {
    const prefix = `test:${randomUUID()}`
    const first = await start('api', prefix)
    const second = await start('api', prefix)
    await start('worker')
    expect(first.services.redis?.mode).to.equal('cluster')

    const tenant = await tenantWithWebhook(first, true)
    const leadIds: string[] = []
    for (let i = 0; i < 5; i++) {
      const created = await postJson(i % 2 === 0 ? first : second, tenant, LIST, {contact_name: `Cluster ${i}`})
      expect(created.status).to.equal(201)
      leadIds.push(created.body.lead.id)
    }
    await waitUntil(() => auditDeliveries(receiver, leadIds).missing.length === 0, 'the five deliveries', 15_000)

    // API-only daemons hand deliveries to the worker through the stream only: the group read them all.
    const {group, newestEntry, length} = await streamGroup()
    expect(length).to.be.at.least(5)
    expect(group, 'the consumer group on the stream master').to.not.equal(undefined)
    expect(group!['last-delivered-id']).to.equal(newestEntry)
    await waitUntil(async () => (await streamGroup()).group!['pending'] === 0, 'every entry to be acknowledged')

    // Counters live on whichever master serves each key's slot; the budget is one across daemons.
    const limited = await newTenant(first.services)
    const statuses: number[] = []
    for (let i = 0; i < 61; i++)
      statuses.push((await (i % 2 === 0 ? first : second).request(LIST, {token: limited.token, customerId: limited.customer.id})).status)
    expect(statuses.slice(0, 60).every((status) => status === 200)).to.equal(true)
    expect(statuses[60]).to.equal(429)
    const usage = await second.services.limiter.usage(limited.key.id)
    expect(usage.minute).to.equal(61)
  })

  it('loses no delivery when the master of the stream is killed during creates, and dispatches through its promoted replica', async function () {
    const api = daemons[0] ?? (await start('api'))
    if (!daemons.some((daemon) => daemon.worker)) await start('worker')
    const tenant: TestTenant = await tenantWithWebhook(api, true)
    const killed = await cluster!.masterOf(STREAM_KEY)

    const started = performance.now()
    const run = await createDuring(api, tenant, 80, 20, () => cluster!.kill(killed))
    await run.fault
    expect(run.refusals, 'creates refused during the failover').to.deep.equal([])
    await waitUntil(() => cluster!.isSettled(5, 3), 'the replica to be promoted', 30_000)
    const promoted = await cluster!.masterOf(STREAM_KEY)
    expect(promoted.id).to.not.equal(killed.id)

    const {audit, warnings} = await reportFailover('cluster failover', receiver, run, started, daemons)
    expect(audit.missing, 'leads whose lead.created never arrived').to.deep.equal([])
    // The fault reached dispatch: enqueues to the killed master failed, and so did the worker's blocked read there.
    expect(warnings.some((warning) => warning.startsWith('redis enqueue failed'))).to.equal(true)
    expect(warnings.some((warning) => warning.startsWith('redis dispatch read failed'))).to.equal(true)

    // Dispatch runs through Redis again: new creates go into the stream on the promoted master and its group hands them out.
    await createAfterFailover(api, tenant, receiver)
    const {master, group, newestEntry} = await streamGroup()
    expect(master.id).to.equal(promoted.id)
    expect(group!['last-delivered-id']).to.equal(newestEntry)
  })

  it('starts while no seed node answers, serves degraded, and uses the cluster once it is up', async function () {
    const ports = await RedisClusterUnderTest.choosePorts(3)
    const seeds = ports.map(([port]) => `127.0.0.1:${port}`).join(',')
    const env = {LEADS_REDIS_URL: '', LEADS_REDIS_CLUSTER_NODES: seeds, LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
    const daemon = await startTestDaemon(backend, {worker: WORKER}, env)
    daemons.push(daemon)
    let late: RedisClusterUnderTest | null = null
    try {
      expect(daemon.logs.join('')).to.include('redis unreachable at start')
      const ready = await daemon.request('/readyz')
      expect(ready.status).to.equal(503)
      expect((ready.body as {checks: unknown}).checks).to.deep.include({database: true, redis: false})
      const tenant = await tenantWithWebhook(daemon, true)
      const before = await postJson(daemon, tenant, LIST, {contact_name: 'Before the cluster'})
      expect(before.status).to.equal(201)
      await waitUntil(() => auditDeliveries(receiver, [before.body.lead.id]).missing.length === 0, 'the delivery made without Redis')

      late = await RedisClusterUnderTest.start(3, 0, ports)
      await waitUntil(() => daemon.services.redis?.isReady, 'the daemon to connect to the cluster', 20_000)
      await waitUntil(async () => (await daemon.request('/readyz')).status === 200, 'the daemon to be ready')
      const after = await postJson(daemon, tenant, LIST, {contact_name: 'After the cluster came up'})
      expect(after.status).to.equal(201)
      await waitUntil(() => auditDeliveries(receiver, [after.body.lead.id]).missing.length === 0, 'the delivery through the cluster')
      const master = await late.masterOf(STREAM_KEY)
      const [newest] = (await command(master.port, ['XREVRANGE', STREAM_KEY, '+', '-', 'COUNT', '1'])) as Array<[string, string[]]>
      expect(newest, 'an entry in the stream on the late cluster').to.not.equal(undefined)
    } finally {
      await daemon.stop().catch(() => undefined)
      daemons.splice(daemons.indexOf(daemon), 1)
      await late?.stop()
    }
  })
})
