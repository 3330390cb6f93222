import v8 from 'node:v8'
import vm from 'node:vm'

import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {newTenant} from '../helpers/fixtures.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon} from '../helpers/test-daemon.js'

describe('GET /metrics', function () {
  const backend = backends()[0]!

  it('is not served unless LEADS_METRICS=1', async function () {
    const daemon = await startTestDaemon(backend)
    try {
      expect((await daemon.request('/metrics')).status).to.equal(401)
    } finally {
      await daemon.stop()
    }
  })

  it('exposes request counts and latency by route, deliveries by outcome, the queue, rate-limit refusals and how creates were written', async function () {
    const receiver = await new Receiver().start()
    const daemon = await startTestDaemon(
      backend,
      {limitsCacheTtlMs: 0, worker: {baseDelayMs: 5, maxDelayMs: 10}},
      {LEADS_METRICS: '1', LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'},
    )
    try {
      const tenant = await newTenant(daemon.services)
      await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0})
      await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Measured'})
      await receiver.waitFor(1)
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 2})
      await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})
      expect((await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})).status).to.equal(429)
      for (let i = 0; i < 100 && (await daemon.db('deliveries').where({status: 'succeeded', customer_id: tenant.customer.id})).length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }

      const response = await daemon.request('/metrics')
      expect(response.status).to.equal(200)
      expect(response.headers.get('content-type')).to.match(/^text\/plain/)
      const text = response.text
      expect(text).to.include('leads_http_requests_total{method="POST",route="/api/agents/crm/leads",status="201"} 1')
      // Refused before routing (401, 429): no route template is known yet.
      expect(text).to.include('leads_http_requests_total{method="GET",route="unmatched",status="429"} 1')
      // The create is timed under its route; which bucket it falls in depends on the machine's load.
      expect(text).to.include('leads_http_request_duration_seconds_count{method="POST",route="/api/agents/crm/leads",status="201"} 1')
      expect(text).to.match(/leads_http_request_duration_seconds_bucket\{le="\+Inf",method="POST",route="\/api\/agents\/crm\/leads",status="201"\} 1/)
      expect(text).to.include('leads_webhook_deliveries_total{outcome="succeeded"} 1')
      expect(text).to.include('leads_rate_limited_total{bucket="default"} 1')
      // One create on SQLite, which always reads before it writes (MySQL's guesses: create-guess.test.ts).
      expect(text).to.include('leads_create_groups_total{way="checked"} 1')
      expect(text).to.include('leads_create_groups_total{way="as_new"} 0')
      expect(text).to.include('leads_bulk_plans_total{way="guessed"} 0')
      expect(text).to.include('leads_bulk_plans_total{way="replanned"} 0')
      expect(text).to.match(/leads_webhook_queue_depth \d+/)
      expect(text).to.match(/leads_webhook_oldest_pending_age_seconds [\d.]+/)
      expect(text).not.to.include(tenant.token)
    } finally {
      await daemon.stop()
      await receiver.stop()
    }
  })
})

describe('delivery scheduling metrics', function () {
  it('count breaker changes, the deliveries a worker holds by state, and the time from create to first attempt', async function () {
    const receiver = await new Receiver().start()
    receiver.fallback = {status: 503}
    const worker = {baseDelayMs: 60_000, maxDelayMs: 60_000, breaker: {failureThreshold: 2, cooldownMs: 60_000}}
    const daemon = await startTestDaemon(backends()[0]!, {worker}, {LEADS_METRICS: '1', LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
    try {
      const tenant = await newTenant(daemon.services)
      const {webhook} = await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})
      await daemon.services.webhooks.setMaxInFlight(webhook.id, 1)
      for (let i = 0; i < 5; i++) await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: `Held ${i}`})
      const metrics = async () => (await daemon.request('/metrics')).text
      // Two attempts fail in a row: the breaker opens and holds the other three; the two back off for a minute.
      for (let i = 0; i < 200 && !(await metrics()).includes('leads_webhook_deliveries_held{state="held"} 3'); i++)
        await new Promise((resolve) => setTimeout(resolve, 25))
      const text = await metrics()
      expect(text).to.include('leads_webhook_breaker_transitions_total{to="open"} 1')
      expect(text).to.include('leads_webhook_deliveries_held{state="held"} 3')
      expect(text).to.include('leads_webhook_deliveries_held{state="backing_off"} 2')
      expect(text).to.include('leads_webhook_deliveries_held{state="delivering"} 0')
      expect(text).to.include('leads_webhook_first_attempt_delay_seconds_count 2')
      expect(receiver.requests).to.have.length(2)
    } finally {
      await daemon.stop()
      await receiver.stop()
    }
  })
})

describe('memory after a full garbage collection', function () {
  it('reports the live heap and RSS right after the latest full collection, and how many there were', async function () {
    const daemon = await startTestDaemon(backends()[0]!, {}, {LEADS_METRICS: '1'})
    try {
      const collections = (text: string) => Number(/^leads_major_gc_total (\d+)$/m.exec(text)?.[1])
      const before = collections((await daemon.request('/metrics')).text)
      // A full collection on demand: the flag exposes gc() to code compiled after it is set.
      v8.setFlagsFromString('--expose-gc')
      const gc = vm.runInNewContext('gc') as () => void
      gc()
      // The collector reports through a PerformanceObserver, on a later turn of the event loop.
      await new Promise((resolve) => setTimeout(resolve, 50))
      const text = (await daemon.request('/metrics')).text
      // Counted, so a reader can tell a new reading from the last one repeated.
      expect(collections(text), text).to.be.above(before)
      const heap = Number(/leads_memory_after_major_gc_bytes\{kind="heap_used"\} (\d+)/.exec(text)?.[1])
      const rss = Number(/leads_memory_after_major_gc_bytes\{kind="rss"\} (\d+)/.exec(text)?.[1])
      expect(heap, text).to.be.above(1_000_000)
      expect(rss).to.be.above(heap)
      expect(heap).to.be.at.most(v8.getHeapStatistics().total_heap_size)
    } finally {
      await daemon.stop()
    }
  })
})

describe('a worker-only daemon', function () {
  it('answers probes and metrics on its port, and nothing of the API', async function () {
    const worker = await startTestDaemon(backends()[0]!, {role: 'worker'}, {LEADS_METRICS: '1'})
    try {
      expect(worker.worker).not.to.equal(null)
      expect((await worker.request('/healthz')).status).to.equal(200)
      expect((await worker.request('/metrics')).text).to.include('leads_webhook_deliveries_total')
      const api = await worker.request('/api/agents/crm/leads')
      expect(api.status).to.equal(404)
      expect(api.body.error.type).to.equal('not_found_error')
    } finally {
      await worker.stop()
    }
  })
})
