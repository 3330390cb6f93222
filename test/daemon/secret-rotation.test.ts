import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant} from '../helpers/fixtures.js'
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
