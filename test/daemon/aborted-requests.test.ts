import http from 'node:http'
import net from 'node:net'

import {expect} from 'chai'

import {getFrom} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'
/** The client address the aborted uploads come from, as every machine behind one NAT would. */
const SHARED_ADDRESS = '127.0.0.3'

/**
 * Starts a bulk upload from SHARED_ADDRESS and drops it mid-body, once the daemon has taken the
 * request (it answered `Expect: 100-continue`): with a reset (a proxy's RST, a killed process) or
 * a plain close (Ctrl-C on a push). Resolves once the connection is gone.
 */
function abortedUpload(url: string, headers: Record<string, string>, how: 'reset' | 'close'): Promise<void> {
  const {hostname, port} = new URL(url)
  return new Promise((resolve) => {
    const socket = net.connect({port: Number(port), host: hostname, localAddress: SHARED_ADDRESS}, () => {
      const lines = Object.entries({...headers, 'content-type': 'application/json', 'content-length': '100000', expect: '100-continue'})
      socket.write(`POST ${BULK} HTTP/1.1\r\nHost: x\r\n${lines.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`)
    })
    socket.once('data', () => {
      socket.write('{"leads": [{"contact_name": "cut off')
      if (how === 'reset') socket.resetAndDestroy()
      else socket.end()
    })
    // A daemon that keeps a half-closed connection open must not hold the test: the assertions say what went wrong.
    socket.setTimeout(2000, () => socket.destroy())
    socket.on('error', () => undefined)
    socket.on('close', () => resolve())
  })
}

async function abortMany(daemon: TestDaemon, headers: Record<string, string>, how: 'reset' | 'close', count: number): Promise<void> {
  for (let sent = 0; sent < count; sent += 10) {
    await Promise.all(Array.from({length: Math.min(10, count - sent)}, () => abortedUpload(daemon.url, headers, how)))
  }
}

function accessLines(daemon: TestDaemon): Array<Record<string, unknown>> {
  return daemon.logs
    .join('')
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** RateLimit-Remaining of a keyless GET from the address. */
function remainingAt(localAddress: string, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, {localAddress}, (response) => {
        response.resume()
        resolve(String(response.headers['ratelimit-remaining']))
      })
      .on('error', reject)
  })
}

const as = (tenant: TestTenant) => ({authorization: `Bearer ${tenant.token}`, 'x-customer-id': tenant.customer.id})

describe('requests the client aborts mid-body', function () {
  this.timeout(60_000)

  forEachBackend((backend) => {
    let daemon: TestDaemon
    let uploader: TestTenant
    let neighbour: TestTenant

    beforeEach(async function () {
      daemon = await startTestDaemon(backend)
      uploader = await newTenant(daemon.services, undefined, {roomy: true})
      neighbour = await newTenant(daemon.services)
    })
    afterEach(async function () {
      await daemon.stop()
    })

    for (const how of ['reset', 'close'] as const) {
      it(`counts one with a valid key (${how}) against the key, never the address, and logs it without the token`, async function () {
        await abortMany(daemon, as(uploader), how, 110)
        await waitUntil(() => accessLines(daemon).filter((line) => line['path'] === BULK).length === 110, 'the daemon to finish the 110 uploads')

        expect(await getFrom(SHARED_ADDRESS, daemon.url + LIST, as(uploader)), 'the uploader').to.equal(200)
        expect(await getFrom(SHARED_ADDRESS, daemon.url + LIST, as(neighbour)), 'another customer at the address').to.equal(200)
        expect((await daemon.services.limiter.usage(uploader.key.id)).bulk).to.equal(110)

        const aborted = accessLines(daemon).filter((line) => line['path'] === BULK)
        for (const line of aborted) expect(line).to.include({method: 'POST', aborted: true, key_id: uploader.key.id, customer_id: uploader.customer.id})
        expect(daemon.logs.join('')).to.not.include(uploader.token.slice(4))
        // Whichever step the abort reached (the guard, the key's limit, the body parser), it is no server error.
        expect(daemon.logs.join('')).to.not.include('unhandled error')
      })
    }

    it('counts one without a valid key once against the address, as any keyless request', async function () {
      await abortMany(daemon, {authorization: `Bearer svc_${'0'.repeat(64)}`}, 'reset', 10)
      await waitUntil(() => accessLines(daemon).filter((line) => line['path'] === BULK).length === 10, 'the daemon to finish the 10 uploads')
      expect(await remainingAt(SHARED_ADDRESS, daemon.url + LIST)).to.equal('89')
    })

    it('closes a kept-alive connection the client resets between requests without counting it', async function () {
      const request = `GET ${LIST} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${uploader.token}\r\nx-customer-id: ${uploader.customer.id}\r\n\r\n`
      for (let i = 0; i < 110; i++) {
        await new Promise<void>((resolve) => {
          const {hostname, port} = new URL(daemon.url)
          const socket = net.connect({port: Number(port), host: hostname, localAddress: SHARED_ADDRESS}, () => socket.write(request))
          // The answer is in: the connection is idle, kept alive, when the client resets it.
          socket.once('data', () => setImmediate(() => socket.resetAndDestroy()))
          socket.on('error', () => undefined)
          socket.on('close', () => resolve())
        })
      }
      await waitUntil(() => accessLines(daemon).length === 110, 'the daemon to log the 110 requests')
      expect(await getFrom(SHARED_ADDRESS, daemon.url + LIST, as(neighbour))).to.equal(200)
      expect(await remainingAt(SHARED_ADDRESS, daemon.url + LIST)).to.equal('99')
    })
  })
})
