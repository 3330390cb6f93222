import {expect} from 'chai'

import {signedRequest} from '../../../src/deliveries/signed-request.js'
import {signatureFor} from '../../../src/deliveries/signing.js'
import type {StoredEvent} from '../../../src/events/events-store.js'
import type {Webhook} from '../../../src/webhooks/webhook-types.js'

const OLD = `svc_whsec_${'1'.repeat(64)}`
const NEW = `svc_whsec_${'2'.repeat(64)}`

describe('signedRequest', function () {
  const webhook = {url: 'https://hooks.example.com/leads', timeoutSeconds: 7} as Webhook
  const event = {type: 'lead.created', payload: {id: 'lead-1'}} as unknown as StoredEvent
  const sentAt = Date.UTC(2026, 10, 22, 12, 0, 1, 234)

  it('signs the same timestamp and body with the previous secret in X-Service-Signature-Previous', function () {
    const request = signedRequest(webhook, {current: NEW, previous: OLD}, event, 'delivery-1', sentAt)
    const timestamp = Math.floor(sentAt / 1000)
    expect(request.headers).to.deep.equal({
      'Content-Type': 'application/json',
      'User-Agent': 'leads-webhooks/1.0',
      'X-Service-Signature': signatureFor(NEW, timestamp, request.body),
      'X-Service-Signature-Previous': signatureFor(OLD, timestamp, request.body),
      'X-Service-Timestamp': String(timestamp),
      'X-Service-Delivery': 'delivery-1',
    })
    expect(request.headers['X-Service-Signature'])
      .to.match(/^sha256=[0-9a-f]{64}$/)
      .and.not.equal(request.headers['X-Service-Signature-Previous'])
  })

  it('sends no X-Service-Signature-Previous without a previous secret, and the rest unchanged', function () {
    const alone = signedRequest(webhook, {current: NEW, previous: null}, event, 'delivery-1', sentAt)
    const both = signedRequest(webhook, {current: NEW, previous: OLD}, event, 'delivery-1', sentAt)
    expect(alone.headers).not.to.have.property('X-Service-Signature-Previous')
    const {['X-Service-Signature-Previous']: _previous, ...rest} = both.headers
    expect(alone).to.deep.equal({...both, headers: rest})
    expect(alone).to.include({url: webhook.url, timeoutMs: 7000})
  })
})
