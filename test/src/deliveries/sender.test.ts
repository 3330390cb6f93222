import type {AddressInfo} from 'node:net'
import net from 'node:net'

import {expect} from 'chai'

import {DeliverySender, RESPONSE_SNIPPET_BYTES} from '../../../src/deliveries/sender.js'
import {signatureFor} from '../../../src/deliveries/signing.js'
import {Receiver} from '../../helpers/receiver.js'

describe('DeliverySender', function () {
  const loopback = {allowHosts: ['localhost'], lookup: async () => [{address: '127.0.0.1', family: 4 as const}]}
  const sender = new DeliverySender(loopback)
  let receiver: Receiver
  const send = (url = receiver.url, timeoutMs = 1000) =>
    sender.send({url, body: '{"event":"lead.created"}', headers: {'content-type': 'application/json', 'x-service-delivery': 'd-1'}, timeoutMs})

  beforeEach(async function () {
    receiver = await new Receiver().start()
  })
  afterEach(async function () {
    await receiver.stop()
  })
  after(function () {
    sender.close()
  })

  it('POSTs the body and headers and keeps the first 1 KiB of the answer', async function () {
    receiver.fallback = {status: 202, body: 'x'.repeat(5000)}
    const result = await send()
    expect(result).to.include({kind: 'response', statusCode: 202})
    expect(result.kind === 'response' && result.snippet).to.equal('x'.repeat(RESPONSE_SNIPPET_BYTES))
    const [request] = receiver.requests
    expect(request!.rawBody.toString()).to.equal('{"event":"lead.created"}')
    expect(request!.headers).to.include({'x-service-delivery': 'd-1', 'content-type': 'application/json', 'content-length': '24'})
  })

  it('reports a timeout when no answer comes within timeoutMs', async function () {
    receiver.fallback = {status: 200, body: 'late', delayMs: 500}
    const result = await send(undefined, 100)
    expect(result.kind).to.equal('timeout')
  })

  it('reports network errors with their code', async function () {
    // A real refused connection: an allowed loopback host on a port nothing listens on.
    const result = await send('https://localhost:1/in')
    expect(result).to.include({kind: 'network'})
    expect(result.kind !== 'response' && result.error).to.match(/^ECONNREFUSED/)
  })

  it('blocks a private IP literal before any request is made', async function () {
    const result = await new DeliverySender({allowHosts: [], lookup: loopback.lookup}).send({
      url: 'https://10.0.0.7/in',
      body: '{}',
      headers: {},
      timeoutMs: 1000,
    })
    expect(result.kind).to.equal('blocked')
  })

  it('blocks a name that resolves to no public address, at connect time', async function () {
    const guarded = new DeliverySender({allowHosts: [], lookup: loopback.lookup})
    const result = await guarded.send({url: receiver.url, body: '{}', headers: {}, timeoutMs: 1000})
    guarded.close()
    expect(result).to.include({kind: 'blocked'})
    expect(receiver.requests).to.have.length(0)
  })
})

describe('DeliverySender timeout', function () {
  const loopback = {allowHosts: ['localhost'], lookup: async () => [{address: '127.0.0.1', family: 4 as const}]}
  let receiver: Receiver
  let sender: DeliverySender
  const send = (timeoutMs: number) => sender.send({url: receiver.url, body: '{}', headers: {'content-type': 'application/json'}, timeoutMs})

  beforeEach(async function () {
    receiver = await new Receiver().start()
  })
  afterEach(async function () {
    sender.close()
    await receiver.stop()
  })

  it("starts when the request is on a socket, so time queued for a pooled socket is not the receiver's", async function () {
    sender = new DeliverySender(loopback, {maxSockets: 1})
    receiver.fallback = {status: 200, body: 'ok', delayMs: 600}
    const [first, second] = await Promise.all([send(1000), send(1000)])
    expect(first).to.include({kind: 'response', statusCode: 200})
    expect(second).to.include({kind: 'response', statusCode: 200})
    // One socket: the second request reached the receiver only after the first was answered.
    expect(receiver.requests[1]!.receivedAt - receiver.requests[0]!.receivedAt).to.be.at.least(550)
    // Its duration is its own ~600 ms on the socket, not the ~1200 ms since send().
    expect(second.durationMs).to.be.within(550, 1000)
  })

  it('still times out a receiver that never answers, after about timeoutMs on the socket', async function () {
    sender = new DeliverySender(loopback, {maxSockets: 1})
    receiver.fallback = {status: 200, until: new Promise(() => {})}
    const started = performance.now()
    const result = await send(300)
    const waited = performance.now() - started
    expect(result.kind).to.equal('timeout')
    expect(result.durationMs).to.be.within(290, 600)
    expect(waited).to.be.within(290, 900)
  })

  it('charges a queued request only its own socket time when the request ahead never answers', async function () {
    sender = new DeliverySender(loopback, {maxSockets: 1})
    receiver.reply({status: 200, until: new Promise(() => {})}, {status: 200, body: 'ok'})
    const [first, second] = await Promise.all([send(400), send(400)])
    expect(first.kind).to.equal('timeout')
    expect(second).to.include({kind: 'response', statusCode: 200})
    expect(second.durationMs).to.be.below(300)
  })

  it('times out a connection whose TLS handshake never ends, as a timeout that spent no receiver time', async function () {
    // Accepts the TCP connection and never answers the TLS hello.
    const silent = net.createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    sender = new DeliverySender(loopback)
    const started = performance.now()
    const result = await sender.send({url: `https://localhost:${(silent.address() as AddressInfo).port}/in`, body: '{}', headers: {}, timeoutMs: 300})
    const waited = performance.now() - started
    silent.close()
    expect(result).to.include({kind: 'timeout', durationMs: 0})
    // undici checks connect timeouts on a coarse tick (up to a second late).
    expect(waited).to.be.within(290, 1500)
  })

  it('rejects a socket bound that is not a positive integer', function () {
    sender = new DeliverySender(loopback)
    expect(() => new DeliverySender(loopback, {maxSockets: 0})).to.throw(RangeError, /maxSockets must be a positive integer, got 0/)
  })
})

describe('signatureFor', function () {
  it('is HMAC-SHA256 over "<timestamp>.<body>" keyed with the whole secret string', function () {
    // Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac 'svc_whsec_00'
    expect(signatureFor('svc_whsec_00', 1_700_000_000, '{"a":1}')).to.equal('sha256=baec3e0471f4c7286879e90ed875f02cc559e4efad690c83e8204aaaa6c060b6')
  })
})
