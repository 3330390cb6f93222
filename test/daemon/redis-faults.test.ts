import type {ChildProcess} from 'node:child_process'

import {expect} from 'chai'
import {createClient} from 'redis'

import {STREAM_KEY} from '../../src/deliveries/redis-stream-queue.js'
import {postJson} from '../helpers/api.js'
import {describeInMysqlRun, forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {freePort, killRedis, startRedis, waitUntil} from '../helpers/local-servers.js'

const CREATE = '/api/agents/crm/leads'
const WORKER = {baseDelayMs: 5, maxDelayMs: 20, sweepIntervalMs: 100, redispatchAfterMs: 500}

/**
 * Redis only dispatches: flushing it, restarting it empty, taking it away, or starting without
 * it must never stop the API or delivery. Each test runs against a redis-server of its own.
 */
describeInMysqlRun('Redis faults @fault', function () {
  forEachBackend((backend) => {
    let port: number
    let redis: ChildProcess
    let receiver: Receiver
    let daemon: TestDaemon | null = null
    let tenant: TestTenant

    const start = async (options: Parameters<typeof startTestDaemon>[1] = {}) => {
      daemon = await startTestDaemon(
        backend,
        {worker: WORKER, ...options},
        {LEADS_REDIS_URL: `redis://127.0.0.1:${port}`, LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'},
      )
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})
      return daemon
    }
    const createLead = async (name: string) => {
      const response = await postJson(daemon!, tenant, CREATE, {contact_name: name})
      expect(response.status).to.equal(201)
      return response.body as {lead: {id: string}}
    }
    const delivered = (count: number) => waitUntil(() => receiver.requests.length >= count, `${count} deliveries to arrive`)
    const directClient = () => createClient({url: `redis://127.0.0.1:${port}`})
    const redisCommand = async (run: (client: ReturnType<typeof directClient>) => Promise<unknown>) => {
      const client = directClient()
      await client.connect()
      try {
        await run(client)
      } finally {
        await client.close()
      }
    }

    beforeEach(async function () {
      port = await freePort()
      redis = await startRedis(port)
      receiver = await new Receiver().start()
    })
    afterEach(async function () {
      await daemon?.stop()
      daemon = null
      await receiver.stop()
      await killRedis(redis)
    })

    it('recreates the consumer group after FLUSHDB and keeps delivering', async function () {
      await start()
      await createLead('Before the flush')
      await delivered(1)
      await redisCommand((client) => client.flushDb())
      await createLead('After the flush')
      await delivered(2)
      // The sweeper may deliver the second lead from the database before the next stream read finds the group gone.
      await waitUntil(() => daemon!.logs.join('').includes('lost its consumer group'), 'the consumer group to be recreated')
      expect((await daemon!.request('/readyz')).status).to.equal(200)
    })

    it('recreates the consumer group after Redis restarts empty and keeps delivering', async function () {
      await start()
      await createLead('Before the restart')
      await delivered(1)
      await killRedis(redis)
      redis = await startRedis(port)
      await waitUntil(() => daemon!.services.redis?.isReady, 'the daemon to reconnect')
      await createLead('After the restart')
      await delivered(2)
      await waitUntil(async () => (await daemon!.request('/readyz')).status === 200, 'the daemon to be ready again')
    })

    it('answers creates at once while Redis is down and still delivers them', async function () {
      await start()
      await killRedis(redis)
      await waitUntil(() => daemon!.services.redis?.isReady === false, 'the daemon to notice Redis is gone')
      const durations: number[] = []
      for (let i = 0; i < 20; i++) {
        const started = performance.now()
        await createLead(`During the outage ${i}`)
        durations.push(performance.now() - started)
      }
      expect(Math.max(...durations)).to.be.below(500)
      await delivered(20)
      const ready = await daemon!.request('/readyz')
      expect(ready.status).to.equal(503)
      expect((ready.body as {reasons: string[]}).reasons.join(' ')).to.include('redis unreachable')
    })

    it('starts while Redis is unreachable, serves degraded, and connects when it returns', async function () {
      await killRedis(redis)
      await start()
      const ready = await daemon!.request('/readyz')
      expect(ready.status).to.equal(503)
      expect(ready.body).to.deep.include({status: 'unavailable'})
      expect((ready.body as {checks: unknown}).checks).to.deep.include({database: true, redis: false})
      const list = await daemon!.request(CREATE, {token: tenant.token, customerId: tenant.customer.id})
      expect(list.status).to.equal(200)
      expect(list.headers.get('ratelimit-remaining')).to.match(/^\d+$/)
      await createLead('Created before Redis came up')
      await delivered(1)
      expect(daemon!.logs.join('')).to.include('redis unreachable at start')

      redis = await startRedis(port)
      await waitUntil(() => daemon!.services.redis?.isReady, 'the daemon to connect', 15_000)
      await waitUntil(async () => (await daemon!.request('/readyz')).status === 200, 'the daemon to be ready')
      await createLead('Created after Redis came up')
      await delivered(2)
      let streamLength = 0
      await redisCommand(async (client) => (streamLength = await client.xLen(STREAM_KEY)))
      // Through the stream now (the sweeper may add the same id again if the worker's new reader is slow to connect).
      expect(streamLength).to.be.at.least(1)
    })

    it('reports a dispatch loop whose reads keep failing in /readyz, and not an idle one', async function () {
      const clock = new ManualClock(Date.now())
      await start({clock})
      const readyz = () => daemon!.request('/readyz')
      // Idle for a long while: blocking reads that return nothing are progress.
      clock.advance(60_000)
      await new Promise((resolve) => setTimeout(resolve, 1500))
      expect((await readyz()).status).to.equal(200)

      // A key of the wrong type makes every read of the stream fail while Redis itself answers.
      await redisCommand(async (client) => {
        await client.del(STREAM_KEY)
        await client.set(STREAM_KEY, 'not a stream')
      })
      await waitUntil(
        () => daemon!.services.readiness().then((r) => r.checks.dispatch === true && daemon!.logs.join('').includes('redis dispatch read failed')),
        'a failed read',
      )
      clock.advance(16_000)
      const stalled = await readyz()
      expect(stalled.status).to.equal(503)
      expect(stalled.body).to.deep.include({checks: {database: true, redis: true, dispatch: false}})
      expect((stalled.body as {reasons: string[]}).reasons).to.have.length(1)
      expect((stalled.body as {reasons: string[]}).reasons[0]).to.match(/^delivery dispatch stalled for 1\d s: \S/)

      await redisCommand((client) => client.del(STREAM_KEY))
      await waitUntil(async () => (await readyz()).status === 200, 'dispatch to recover')
      await createLead('After recovery')
      await delivered(1)
    })
  })
})
