import net from 'node:net'

import {expect} from 'chai'

import {getFrom} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
const sqlite = () => backends()[0]!

/** Sends raw bytes and returns what the daemon answered before closing the connection. */
function rawExchange(url: string, bytes: string | Buffer): Promise<string> {
  const {hostname, port} = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(bytes))
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
    socket.setTimeout(5000, () => reject(new Error('no answer')))
  })
}

function parse(answer: string): {status: number; headers: Record<string, string>; body: {error: {type: string; code: number; message: string}}} {
  const [head, body] = answer.split('\r\n\r\n')
  const [statusLine, ...lines] = head!.split('\r\n')
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  return {status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body!)}
}

describe('requests refused before routing', function () {
  let daemon: TestDaemon
  let tenant: TestTenant

  beforeEach(async function () {
    // Lookups are cached for a minute, not the default 2 s: a hundred requests on a loaded machine
    // can take longer than that, and the keyless-budget test counts lookups.
    daemon = await startTestDaemon(sqlite(), {keyCacheTtlMs: 60_000})
    tenant = await newTenant(daemon.services)
  })
  afterEach(async function () {
    await daemon.stop()
  })

  describe("errors of Node's HTTP parser", function () {
    const cases: Array<[string, string | Buffer, number]> = [
      ['a method HTTP does not have', 'FOO / HTTP/1.1\r\nHost: x\r\n\r\n', 501],
      ['headers over 16 KiB', `GET ${LIST} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['a URL over 16 KiB', `GET ${LIST}?search=${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
      ['a NUL in a header', Buffer.from(`GET ${LIST} HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n`, 'latin1'), 400],
    ]
    for (const [what, bytes, status] of cases) {
      it(`answers ${what} with the envelope and the RateLimit headers`, async function () {
        const answer = parse(await rawExchange(daemon.url, bytes))
        expect(answer.status).to.equal(status)
        expect(answer.headers['content-type']).to.match(/^application\/json/)
        expect(answer.body.error).to.include({type: 'invalid_request_error', code: status})
        expect(answer.headers['x-request-id']).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
        expect(answer.headers['ratelimit-limit']).to.equal('100')
        expect(Number(answer.headers['ratelimit-remaining'])).to.be.within(0, 99)
        expect(Number(answer.headers['ratelimit-reset'])).to.be.above(0)
      })
    }
  })

  describe('CONNECT, which Node hands to the app only through a listener', function () {
    it('answers it like any method a path does not serve, and closes the connection', async function () {
      const credentials = `Authorization: Bearer ${tenant.token}\r\nx-customer-id: ${tenant.customer.id}\r\n`
      const known = parse(await rawExchange(daemon.url, `CONNECT ${LIST} HTTP/1.1\r\nHost: x\r\n${credentials}\r\n`))
      expect(known.status).to.equal(405)
      expect(known.headers['allow']).to.equal('HEAD, GET, POST')
      expect(known.headers['connection']).to.equal('close')
      expect(known.headers['ratelimit-limit']).to.match(/^\d+$/)
      expect(known.body.error).to.include({type: 'invalid_request_error', code: 405})

      const tunnel = parse(await rawExchange(daemon.url, `CONNECT hooks.example.com:443 HTTP/1.1\r\nHost: hooks.example.com:443\r\n${credentials}\r\n`))
      expect(tunnel.status).to.equal(404)
      expect(tunnel.body.error).to.include({type: 'not_found_error', code: 404})

      const anonymous = parse(await rawExchange(daemon.url, 'CONNECT hooks.example.com:443 HTTP/1.1\r\nHost: hooks.example.com:443\r\n\r\n'))
      expect(anonymous.status).to.equal(401)
      expect(anonymous.headers['ratelimit-limit']).to.equal('100')
    })
  })

  describe('the keyless budget of an address', function () {
    it('refuses an address that spent it before looking up any token, valid or not', async function () {
      let lookups = 0
      const authenticator = daemon.services.keyAuthenticator
      const authenticate = authenticator.authenticate.bind(authenticator)
      authenticator.authenticate = (token: string) => {
        lookups++
        return authenticate(token)
      }
      const guess = {authorization: `Bearer svc_${'0'.repeat(64)}`, 'x-customer-id': tenant.customer.id}
      const valid = {authorization: `Bearer ${tenant.token}`, 'x-customer-id': tenant.customer.id}
      for (let i = 0; i < 100; i++) expect(await getFrom('127.0.0.1', daemon.url + LIST, guess)).to.equal(401)
      // The same guess again is answered from the authenticator's cache of misses.
      expect(lookups).to.equal(1)

      expect(await getFrom('127.0.0.1', daemon.url + LIST, guess)).to.equal(429)
      expect(await getFrom('127.0.0.1', daemon.url + LIST, valid)).to.equal(429)
      expect(lookups).to.equal(1)
      // Another client address is not affected.
      expect(await getFrom('127.0.0.2', daemon.url + LIST, valid)).to.equal(200)
    })
  })

  it('serves /openapi.json without a key, counted in the keyless budget', async function () {
    const first = await daemon.request('/openapi.json')
    expect(first.status).to.equal(200)
    expect(first.headers.get('ratelimit-limit')).to.equal('100')
    expect(first.headers.get('ratelimit-remaining')).to.equal('99')
  })
})
