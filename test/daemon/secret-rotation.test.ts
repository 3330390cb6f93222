import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {forEachBackend, TEST_MASTER_KEY} from '../helpers/backends.js'
import {runCli} from '../helpers/cli.js'
import {newTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {verifyDelivery} from '../helpers/verify-signature.js'

/** Short backoff, so the retry comes within a second of the failed attempt's answer. */
const WORKER = {baseDelayMs: 200, maxDelayMs: 400}

describe('secret rotation while a delivery is being retried', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let receiver: Receiver

    before(async function () {
      receiver = await new Receiver().start()
      daemon = await startTestDaemon(backend, {worker: WORKER}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
    })
    after(async function () {
      await daemon.stop()
      await receiver.stop()
    })

    it('signs the retry sent after the rotation with the new secret, and with the old one in X-Service-Signature-Previous', async function () {
      const tenant = await newTenant(daemon.services, undefined, {roomy: true})
      const created = await daemon.services.webhooks.create(tenant.customer.id, {
        url: receiver.url,
        event_types: ['lead.created'],
        retry_attempts: 2,
        timeout_seconds: 10,
      })
      const [webhookId, oldSecret] = [created.webhook.id, created.secret as string]
      // The first attempt gets its 500 only once the secret is rotated: the retry is sent after the rotation, whatever the timing.
      let answerFirst = () => {}
      receiver.reply({status: 500, body: 'down', until: new Promise<void>((resolve) => (answerFirst = resolve))})

      const lead = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Retried across a rotation'})
      expect(lead.status).to.equal(201)
      await receiver.waitFor(1)
      const rotated = await daemon.services.webhooks.update(tenant.customer.id, webhookId, {rotate_secret: true})
      const newSecret = rotated.secret as string
      answerFirst()
      await receiver.waitFor(2)

      const [first, retry] = receiver.requests
      expect(retry!.headers['x-service-delivery']).to.equal(first!.headers['x-service-delivery'])
      expect(verifyDelivery(first!, oldSecret)).to.equal(true)
      expect(first!.headers).not.to.have.property('x-service-signature-previous')
      expect(retry!.headerNames).to.include('X-Service-Signature-Previous')
      expect(verifyDelivery(retry!, newSecret), 'the retry, X-Service-Signature with the new secret').to.equal(true)
      expect(
        verifyDelivery(retry!, oldSecret, Date.now(), 300, 'x-service-signature-previous'),
        'the retry, X-Service-Signature-Previous with the old secret',
      ).to.equal(true)

      const deliveryId = String(first!.headers['x-service-delivery'])
      const deadline = Date.now() + 10_000
      let delivery = await daemon.services.deliveries.show(deliveryId)
      while (delivery.status !== 'succeeded' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        delivery = await daemon.services.deliveries.show(deliveryId)
      }
      expect(delivery.attempts.map((attempt) => [attempt.statusCode, attempt.outcome])).to.deep.equal([
        [500, 'retry'],
        [200, 'success'],
      ])
    })
  })
})

describe('a webhook secret sealed under a lost master key (docs/operations.md, "Runbook: the master key is lost")', function () {
  forEachBackend((backend) => {
    const adoptedKey = 'cd'.repeat(32)
    const adopt = (key: string) => runCli(['maintenance', 'adopt-master-key', '--yes'], {...backend.env, LEADS_MASTER_KEY: key})
    let receiver: Receiver

    before(async function () {
      receiver = await new Receiver().start()
    })
    after(async function () {
      await receiver.stop()
    })

    it('fails the deliveries of a webhook not yet rotated, and sends those of one rotated already, claimed with them', async function () {
      // Before the key is lost: a webhook sealed under the test key.
      const before = await startTestDaemon(backend, {}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      const tenant = await newTenant(before.services, undefined, {roomy: true})
      const stale = (await before.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0})).webhook
        .id
      await before.stop()
      // The runbook: adopt a new key, start the daemons with it, rotate the webhooks one by one (here: one of two).
      expect((await adopt(adoptedKey)).code).to.equal(0)
      let daemon: TestDaemon | undefined
      try {
        daemon = await startTestDaemon(backend, {worker: WORKER}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost', LEADS_MASTER_KEY: adoptedKey})
        const rotated = await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0})
        const lead = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Sent across a lost key'})
        expect(lead.status).to.equal(201)

        await receiver.waitFor(1)
        expect(verifyDelivery(receiver.requests[0]!, rotated.secret as string)).to.equal(true)
        const staleDelivery = await waitUntil(async () => {
          const [row] = await daemon!.db('deliveries').where({customer_id: tenant.customer.id, webhook_id: stale})
          return row?.status === 'failed' ? row : null
        }, 'the stale webhook delivery failed')
        expect(staleDelivery.last_error).to.equal(
          `the signing secret does not open with this LEADS_MASTER_KEY (it was sealed under another key): rotate it (leads webhooks rotate-secret ${stale}), then redeliver`,
        )
        expect(receiver.requests).to.have.length(1)
      } finally {
        await daemon?.stop()
        expect((await adopt(TEST_MASTER_KEY)).code).to.equal(0)
      }
    })
  })
})
