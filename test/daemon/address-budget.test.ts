import {randomBytes} from 'node:crypto'
import http from 'node:http'
import net from 'node:net'

import {expect} from 'chai'

import {getFrom} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
/** One client address: everything behind a NAT, the operator's own sync job included. */
const ADDRESS = '127.0.0.4'

const bearer = (token: string, customerId: string) => ({authorization: `Bearer ${token}`, 'x-customer-id': customerId})
const randomToken = () => `svc_${randomBytes(32).toString('hex')}`

/** A GET from ADDRESS with its status and RateLimit headers. */
function getAt(url: string, headers: Record<string, string>): Promise<{status: number; limit: string; remaining: string}> {
  return new Promise((resolve, reject) => {
    http
      .get(url, {localAddress: ADDRESS, headers, agent: false}, (response) => {
        response.resume()
        const header = (name: string) => String(response.headers[name])
        resolve({status: response.statusCode ?? 0, limit: header('ratelimit-limit'), remaining: header('ratelimit-remaining')})
      })
      .on('error', reject)
  })
}

/**
 * Sends one GET per header set from ADDRESS, all at once: every connection is open first, then
 * every request is written in the same tick, so the daemon reads them together. Their statuses,
 * in order.
 */
async function burst(url: string, requests: Array<Record<string, string>>): Promise<number[]> {
  const {hostname, port, pathname} = new URL(url)
  const sockets = await Promise.all(
    requests.map(
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect({port: Number(port), host: hostname, localAddress: ADDRESS}, () => resolve(socket))
          socket.once('error', reject)
        }),
    ),
  )
  const answers = sockets.map(
    (socket) =>
      new Promise<number>((resolve, reject) => {
        let head = ''
        socket.setEncoding('latin1')
        socket.on('data', (chunk: string) => (head += chunk))
        socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)))
        socket.on('error', reject)
      }),
  )
  requests.forEach((headers, index) => {
    const lines = Object.entries({host: 'x', connection: 'close', ...headers}).map(([name, value]) => `${name}: ${value}\r\n`)
    sockets[index]!.write(`GET ${pathname} HTTP/1.1\r\n${lines.join('')}\r\n`)
  })
  return Promise.all(answers)
}

/** Counts the token lookups the daemon makes (each may cost a database query). */
function countLookups(daemon: TestDaemon): {readonly count: number} {
  const counter = {count: 0}
  const authenticator = daemon.services.keyAuthenticator
  const authenticate = authenticator.authenticate.bind(authenticator)
  authenticator.authenticate = (token: string) => {
    counter.count++
    return authenticate(token)
  }
  return counter
}

/** As countLookups, with each lookup taking `ms` longer: a database slow to answer. */
function slowLookups(daemon: TestDaemon, ms: number): {readonly count: number} {
  const counter = {count: 0}
  const authenticator = daemon.services.keyAuthenticator
  const authenticate = authenticator.authenticate.bind(authenticator)
  authenticator.authenticate = async (token: string) => {
    counter.count++
    await new Promise((resolve) => setTimeout(resolve, ms))
    return authenticate(token)
  }
  return counter
}

async function spendBudget(daemon: TestDaemon, customerId: string): Promise<void> {
  for (let i = 0; i < 100; i++) expect((await getAt(daemon.url + LIST, bearer(randomToken(), customerId))).status).to.equal(401)
  expect((await getAt(daemon.url + LIST, bearer(randomToken(), customerId))).status).to.equal(429)
}

describe('the keyless budget of a client address', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant

    beforeEach(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services)
    })
    afterEach(async function () {
      await daemon.stop()
    })

    describe('for an internal key', function () {
      it('is no limit: the key is served from an address that spent it, seen there before or not', async function () {
        const issue = () => daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:read'], internal: true})
        const [seen, unseen, revoked] = [await issue(), await issue(), await issue()]
        await daemon.services.keys.revoke(revoked.key.id)
        expect((await getAt(daemon.url + LIST, bearer(seen.token, tenant.customer.id))).status).to.equal(200)
        await spendBudget(daemon, tenant.customer.id)

        for (const internal of [seen, unseen]) {
          expect(await getAt(daemon.url + LIST, bearer(internal.token, tenant.customer.id))).to.deep.equal({status: 200, limit: '60', remaining: '60'})
        }
        // A customer's key is refused there, and a revoked internal key like any guess.
        expect((await getAt(daemon.url + LIST, bearer(tenant.token, tenant.customer.id))).status).to.equal(429)
        expect((await getAt(daemon.url + LIST, bearer(revoked.token, tenant.customer.id))).status).to.equal(429)
      })

      it('opens no way around the guard: guesses from a spent address are refused without a token lookup', async function () {
        await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:read'], internal: true})
        await spendBudget(daemon, tenant.customer.id)
        const lookups = countLookups(daemon)
        for (let i = 0; i < 50; i++) expect((await getAt(daemon.url + LIST, bearer(randomToken(), tenant.customer.id))).status).to.equal(429)
        expect(lookups.count).to.equal(0)
      })
    })

    describe('under a burst', function () {
      this.timeout(60_000)

      it('looks up no more tokens than the budget, and refuses a valid token sent with the burst', async function () {
        const valid = bearer(tenant.token, tenant.customer.id)
        // The valid key was just served from the address: the daemon knows both.
        expect((await getAt(daemon.url + LIST, valid)).status).to.equal(200)
        const lookups = countLookups(daemon)

        const guesses = Array.from({length: 1000}, () => bearer(randomToken(), tenant.customer.id))
        const statuses = await burst(daemon.url + LIST, [...guesses, valid])
        const tally = statuses.slice(0, -1).reduce<Record<number, number>>((counts, status) => ({...counts, [status]: (counts[status] ?? 0) + 1}), {})
        expect(tally).to.deep.equal({401: 100, 429: 900})
        expect(lookups.count, 'token lookups during the burst').to.equal(100)
        expect(statuses.at(-1), 'the valid token, sent last').to.equal(429)

        expect((await getAt(daemon.url + LIST, valid)).status).to.equal(429)
        expect(await getFrom('127.0.0.1', daemon.url + LIST, valid), 'from another address').to.equal(200)
      })

      it("spends none of it on a valid key's burst, sent before the daemon knows the key", async function () {
        // A customer whose budget the operator raised sends 150 requests at once with a token the
        // daemon has not looked up yet, while the database is slow to answer. None of them is a
        // keyless request.
        const roomy = await newTenant(daemon.services, undefined, {roomy: true})
        const lookups = slowLookups(daemon, 300)
        const statuses = await burst(
          daemon.url + LIST,
          Array.from({length: 150}, () => bearer(roomy.token, roomy.customer.id)),
        )
        const tally = statuses.reduce<Record<number, number>>((counts, status) => ({...counts, [status]: (counts[status] ?? 0) + 1}), {})
        expect(tally, 'the burst of a valid key').to.deep.equal({200: 150})
        expect(lookups.count, 'token lookups during the burst').to.equal(1)

        // Another customer behind the same address, seen there for the first time, is served,
        // and the address keeps its whole keyless budget for requests without a valid key.
        expect((await getAt(daemon.url + LIST, bearer(tenant.token, tenant.customer.id))).status).to.equal(200)
        const guess = await getAt(daemon.url + LIST, bearer(randomToken(), tenant.customer.id))
        expect(guess).to.deep.equal({status: 401, limit: '100', remaining: '99'})
      })
    })
  })
})
