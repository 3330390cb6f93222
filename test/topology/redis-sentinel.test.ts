import {expect} from 'chai'

import {CONSUMER_GROUP, STREAM_KEY} from '../../src/deliveries/redis-stream-queue.js'
import {postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {auditDeliveries, createAfterFailover, createDuring, reportFailover} from '../helpers/delivery-audit.js'
import {newTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {command, RedisSentinelUnderTest, SENTINEL_MASTER} from '../helpers/redis-topology.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
const WORKER = {baseDelayMs: 5, maxDelayMs: 20, sweepIntervalMs: 100, redispatchAfterMs: 1000}
// MariaDB when the run has one, else SQLite: the database is not what is tested here.
const backend = backends().at(-1)!

/**
 * The daemons on Redis found through Sentinel (one master, one replica, three sentinels, all on
 * loopback): the master is killed during a stream of creates with a webhook, the sentinels
 * promote the replica, and dispatch must resume there with every lead.created delivered.
 */
describe(`Redis Sentinel (master, replica, 3 sentinels, on ${backend.name})`, function () {
  let deployment: RedisSentinelUnderTest | null = null
  let receiver: Receiver
  const daemons: TestDaemon[] = []

  const start = async (role: 'api' | 'worker') => {
    const env = {
      LEADS_REDIS_URL: '',
      LEADS_REDIS_SENTINELS: deployment!.sentinelList,
      LEADS_REDIS_SENTINEL_MASTER: SENTINEL_MASTER,
      LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost',
    }
    const daemon = await startTestDaemon(backend, {role, worker: WORKER}, env)
    daemons.push(daemon)
    return daemon
  }
  /** The stream's consumer group on `port` (RESP3: one map per group), and the stream's newest entry. */
  const streamGroup = async (port: number) => {
    const groups = (await command(port, ['XINFO', 'GROUPS', STREAM_KEY])) as Array<Record<string, string | number | null>>
    const [newest] = (await command(port, ['XREVRANGE', STREAM_KEY, '+', '-', 'COUNT', '1'])) as Array<[string, string[]]>
    return {group: groups.find((fields) => fields['name'] === CONSUMER_GROUP), newestEntry: newest?.[0] ?? null}
  }

  before(async function () {
    deployment = await RedisSentinelUnderTest.start()
    receiver = await new Receiver().start()
  })
  after(async function () {
    for (const daemon of daemons.splice(0)) await daemon.stop().catch(() => undefined)
    await receiver?.stop()
    await deployment?.stop()
  })

  it('resumes dispatch on the promoted replica after the master is killed during creates, losing no lead.created', async function () {
    const api = await start('api')
    await start('worker')
    expect(api.services.redis?.mode).to.equal('sentinel')
    const tenant = await newTenant(api.services, undefined, {roomy: true})
    await api.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})

    // Before the fault the worker takes deliveries from the stream on the master.
    const first = await postJson(api, tenant, LIST, {contact_name: 'Before the failover'})
    expect(first.status).to.equal(201)
    await waitUntil(() => auditDeliveries(receiver, [first.body.lead.id]).missing.length === 0, 'the first delivery')
    const oldMaster = deployment!.master.port
    expect((await streamGroup(oldMaster)).group?.['last-delivered-id']).to.equal((await streamGroup(oldMaster)).newestEntry)

    const started = performance.now()
    const run = await createDuring(api, tenant, 80, 20, () => deployment!.killMaster())
    await run.fault
    expect(run.refusals, 'creates refused during the failover').to.deep.equal([])
    await waitUntil(async () => (await deployment!.masterPort()) === deployment!.replica.port, 'the sentinels to promote the replica', 30_000)

    const {audit, warnings} = await reportFailover('sentinel failover', receiver, run, started, daemons)
    expect(audit.missing, 'leads whose lead.created never arrived').to.deep.equal([])
    // The fault reached dispatch: enqueues were held past their timeout. (The worker's reader may
    // not notice: node-redis's sentinel client re-sends its blocked read to the new master.)
    expect(warnings.some((warning) => warning.startsWith('redis enqueue failed'))).to.equal(true)

    // Dispatch runs through Redis again: new entries land in the stream on the promoted replica and its group hands them out.
    await createAfterFailover(api, tenant, receiver)
    const promoted = await streamGroup(deployment!.replica.port)
    expect(promoted.newestEntry).to.not.equal(null)
    expect(promoted.group?.['last-delivered-id']).to.equal(promoted.newestEntry)
  })
})
