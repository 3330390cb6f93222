import http from 'node:http'

import {expect} from 'chai'
import mysql2 from 'mysql2/promise'

import {postJson} from '../helpers/api.js'
import {backends, describeInMysqlRun, forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

function expectEnvelope(response: TestResponse, status: number, type: string): void {
  expect(response.status).to.equal(status)
  expect(response.headers.get('content-type')).to.match(/^application\/json/)
  expect(response.body).to.have.keys(['error'])
  expect(response.body.error).to.include({type, code: status})
  expect(response.body.error.message).to.be.a('string').and.not.equal('')
}

/** A request with any method: fetch() refuses TRACE. */
function rawRequest(url: string, method: string, headers: Record<string, string>): Promise<{status: number; headers: http.IncomingHttpHeaders; text: string}> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {method, headers}, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({status: response.statusCode ?? 0, headers: response.headers, text}))
    })
    request.on('error', reject)
    request.end()
  })
}

describe('error envelope', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const auth = () => ({token: tenant.token, customerId: tenant.customer.id})

    before(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services)
    })
    after(async function () {
      await daemon.stop()
    })

    it('answers an unknown route with 404 not_found_error', async function () {
      expectEnvelope(await daemon.request('/api/agents/crm/contacts', auth()), 404, 'not_found_error')
      expectEnvelope(await daemon.request('/', auth()), 404, 'not_found_error')
    })

    it('answers an unknown route without credentials with 401, revealing nothing', async function () {
      expectEnvelope(await daemon.request('/api/agents/crm/contacts'), 401, 'authentication_error')
    })

    it('answers a wrong method with 405 and an Allow header', async function () {
      const response = await daemon.request('/api/agents/crm/leads', {...auth(), method: 'DELETE'})
      expectEnvelope(response, 405, 'invalid_request_error')
      expect(response.headers.get('allow')).to.equal('HEAD, GET, POST')
    })

    it('answers every method a path does not serve with 405 and its Allow header, TRACE and OPTIONS included', async function () {
      const paths: Array<[string, string]> = [
        ['/api/agents/crm/leads', 'HEAD, GET, POST'],
        ['/api/agents/crm/leads/bulk', 'POST'],
        ['/api/agents/crm/lead-webhooks', 'POST, HEAD, GET'],
        ['/api/agents/crm/lead-webhooks/wh_0123', 'PATCH, DELETE'],
        ['/api/agents/crm/lead-webhooks/wh_0123/recover', 'POST'],
      ]
      for (const [path, allow] of paths) {
        for (const method of ['TRACE', 'OPTIONS', 'PUT', 'PROPFIND', 'QUERY']) {
          const response = await rawRequest(daemon.url + path, method, {authorization: `Bearer ${tenant.token}`, 'x-customer-id': tenant.customer.id})
          expect(response.status, `${method} ${path}`).to.equal(405)
          expect(response.headers['allow'], `${method} ${path}`).to.equal(allow)
          expect(response.headers['ratelimit-limit'], `${method} ${path}`).to.match(/^\d+$/)
          expect(JSON.parse(response.text).error, `${method} ${path}`).to.deep.equal({
            type: 'invalid_request_error',
            code: 405,
            message: 'Method not allowed on this path; the Allow header lists the methods it serves.',
          })
        }
      }
    })

    it('answers a wrong method on an API path without credentials with 401, and on a public path with 405', async function () {
      expect((await rawRequest(daemon.url + '/api/agents/crm/leads', 'TRACE', {})).status).to.equal(401)
      for (const path of ['/healthz', '/readyz', '/openapi.json']) {
        const response = await rawRequest(daemon.url + path, 'TRACE', {})
        expect(response.status, path).to.equal(405)
        expect(response.headers['allow'], path).to.equal('HEAD, GET')
        expect(response.headers['ratelimit-limit'], path).to.equal('100')
      }
    })

    it('answers an unknown path with 404 whatever the method', async function () {
      for (const method of ['GET', 'TRACE', 'OPTIONS', 'PROPFIND']) {
        const response = await rawRequest(daemon.url + '/api/agents/crm/contacts', method, {
          authorization: `Bearer ${tenant.token}`,
          'x-customer-id': tenant.customer.id,
        })
        expect(response.status, method).to.equal(404)
        expect(response.headers['allow'], method).to.equal(undefined)
      }
    })

    it('answers a non-JSON body with 415', async function () {
      const response = await daemon.request('/api/agents/crm/leads', {
        ...auth(),
        method: 'POST',
        headers: {'content-type': 'text/csv'},
        body: 'name\nAda',
      })
      expectEnvelope(response, 415, 'invalid_request_error')
    })

    it('answers malformed JSON with 400 saying it is not valid JSON', async function () {
      for (const body of ['{"contact_name": ', 'x', 'contact_name=Ada']) {
        const response = await daemon.request('/api/agents/crm/leads', {...auth(), method: 'POST', headers: {'content-type': 'application/json'}, body})
        expectEnvelope(response, 400, 'invalid_request_error')
        expect(response.body.error.message, body).to.equal('Request body is not valid JSON.')
      }
    })

    it('answers valid JSON that is not an object with 400 saying so, not "not valid JSON"', async function () {
      for (const [path, body] of [
        ['/api/agents/crm/leads', 'null'],
        ['/api/agents/crm/leads', '"Ada"'],
        ['/api/agents/crm/leads', '[]'],
        ['/api/agents/crm/leads/bulk', '42'],
        ['/api/agents/crm/leads/bulk', '[{"contact_name": "Ada"}]'],
        ['/api/agents/crm/lead-webhooks', 'true'],
      ] as const) {
        const response = await daemon.request(path, {...auth(), method: 'POST', headers: {'content-type': 'application/json'}, body})
        expectEnvelope(response, 400, 'invalid_request_error')
        expect(response.body.error, `${path} ${body}`).to.include({message: 'Request body must be a JSON object.', param: 'body'})
      }
    })

    it('answers a body over 1 MiB with 413 saying the limit', async function () {
      const response = await daemon.request('/api/agents/crm/leads', {
        ...auth(),
        method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({contact_name: 'x'.repeat(1024 * 1024 + 10)}),
      })
      expectEnvelope(response, 413, 'invalid_request_error')
      expect(response.body.error.message).to.equal('Request body is too large: this endpoint takes at most 1 MiB (after decompression).')
    })

    it('echoes a sane X-Request-Id and mints one otherwise', async function () {
      const given = await daemon.request('/healthz', {headers: {'x-request-id': 'trace-123'}})
      expect(given.headers.get('x-request-id')).to.equal('trace-123')
      const minted = await daemon.request('/healthz', {headers: {'x-request-id': 'bad id with spaces'}})
      expect(minted.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/)
    })

    it('never writes a token or the Authorization header to the logs', async function () {
      await daemon.request('/api/agents/crm/leads', auth())
      await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: 'bad'})
      const logs = daemon.logs.join('')
      expect(logs).to.include('"path":"/api/agents/crm/leads"')
      expect(logs).not.to.include(tenant.token)
      expect(logs.toLowerCase()).not.to.include('bearer')
    })
  })
})

describe('error envelope for unexpected failures', function () {
  forEachBackend((backend) => {
    it('answers 500 api_error with no SQL or stack when the database is gone, and /readyz says 503', async function () {
      const daemon = await startTestDaemon(backend)
      try {
        const tenant = await newTenant(daemon.services)
        // Warm the key cache, then take the database away underneath the running daemon.
        expect((await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})).status).to.equal(200)
        await daemon.db.destroy()
        const response = await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})
        expectEnvelope(response, 500, 'api_error')
        expect(response.text).not.to.match(/select|from|leads`|at .*\.js/i)
        const ready = await daemon.request('/readyz')
        expect(ready.status).to.equal(503)
        expect(ready.body.checks.database).to.equal(false)
        expect(daemon.logs.join('')).to.include('unhandled error')
      } finally {
        await daemon.stop().catch(() => undefined)
      }
    })

    it("carries the key's RateLimit headers when the database fails while the key's overrides are read again", async function () {
      // The token stays known; the key's limits are read again on every request.
      const daemon = await startTestDaemon(backend, {keyCacheTtlMs: 60_000, limitsCacheTtlMs: 0})
      try {
        const tenant = await newTenant(daemon.services)
        const auth = {token: tenant.token, customerId: tenant.customer.id}
        const before = await daemon.request('/api/agents/crm/leads', auth)
        expect(before.status).to.equal(200)
        await daemon.db.destroy()
        const response = await daemon.request('/api/agents/crm/leads', auth)
        expect(response.status).to.be.oneOf([500, 503])
        expect(response.body.error).to.include({type: 'api_error', code: response.status})
        expect(response.headers.get('ratelimit-limit')).to.equal('60')
        // The failed request is given back to the key: its budget is as the first request left it.
        expect(response.headers.get('ratelimit-remaining')).to.equal('59')
        expect(response.headers.get('ratelimit-reset')).to.match(/^\d+$/)
      } finally {
        await daemon.stop().catch(() => undefined)
      }
    })

    it('gives the requests the service failed to answer back to their key, as a client retrying a 5xx is asked to', async function () {
      // The token stays known while the database is gone, so the requests reach the key's limit.
      const daemon = await startTestDaemon(backend, {keyCacheTtlMs: 60_000})
      try {
        const tenant = await newTenant(daemon.services)
        const auth = {token: tenant.token, customerId: tenant.customer.id}
        expect((await daemon.request('/api/agents/crm/leads', auth)).status).to.equal(200)
        await daemon.db.destroy()
        for (const request of [
          () => daemon.request('/api/agents/crm/leads', auth),
          () => postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Lost'}),
          () => postJson(daemon, tenant, '/api/agents/crm/leads/bulk', {leads: [{contact_name: 'Lost'}]}),
        ]) {
          const response = await request()
          expect(response.status).to.be.at.least(500)
          expect(response.headers.get('ratelimit-remaining'), response.text).to.equal(response.headers.get('ratelimit-limit') === '60' ? '59' : '10')
        }
        expect(await daemon.services.limiter.usage(tenant.key.id)).to.deep.include({minute: 1, hour: 1, bulk: 0})
      } finally {
        await daemon.stop().catch(() => undefined)
      }
    })

    it('carries the RateLimit headers of the client address when the database fails the token lookup', async function () {
      const daemon = await startTestDaemon(backend)
      try {
        const tenant = await newTenant(daemon.services)
        const before = await daemon.request('/api/agents/crm/leads', {customerId: tenant.customer.id})
        expect(before.status).to.equal(401)
        // Nothing cached for this token: the daemon must look it up in a database that is gone.
        await daemon.db.destroy()
        const response = await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})
        expectEnvelope(response, 500, 'api_error')
        // The failed lookup is given back to the address: its budget is as the 401 left it.
        expect(response.headers.get('ratelimit-limit')).to.equal(before.headers.get('ratelimit-limit'))
        expect(response.headers.get('ratelimit-remaining')).to.equal(before.headers.get('ratelimit-remaining'))
        expect(response.headers.get('ratelimit-reset')).to.match(/^\d+$/)
      } finally {
        await daemon.stop().catch(() => undefined)
      }
    })
  })
})

describeInMysqlRun('error envelope for a request the database refused for a conflict', function () {
  const mysql = backends().find((each) => each.name === 'mysql')!

  for (const key of [undefined, 'ann-again']) {
    it(`answers 503 with Retry-After, not 500 or 409, when a create ${key ? 'under an Idempotency-Key ' : ''}waits on a lock until the wait runs out, and writes nothing`, async function () {
      const admin = await mysql2.createConnection({uri: mysql.env['LEADS_DATABASE_URL']!})
      const [[{timeout}]] = (await admin.query('SELECT @@GLOBAL.innodb_lock_wait_timeout AS timeout')) as unknown as [[{timeout: number}]]
      // The daemon's connections open after this: each waits 1 s for a lock, not InnoDB's 50 s.
      await admin.query('SET GLOBAL innodb_lock_wait_timeout = 1')
      let daemon: TestDaemon | undefined
      try {
        daemon = await startTestDaemon(mysql)
        const tenant = await newTenant(daemon.services)
        const first = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Ann', contact_email: 'ann@example.org'})
        expect(first.status).to.equal(201)
        // Another transaction holds the person's match locks, as a long write of the same person would.
        await admin.beginTransaction()
        await admin.query('SELECT match_key FROM lead_match_locks WHERE customer_id = ? FOR UPDATE', [tenant.customer.id])
        const response = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Ann Again', contact_email: 'ann@example.org'}, key)
        await admin.rollback()

        expectEnvelope(response, 503, 'api_error')
        expect(response.headers.get('retry-after')).to.match(/^\d+$/)
        expect(response.body.error.message).to.match(/conflict with concurrent requests/)
        expect(daemon.logs.join('')).to.include('database conflict').and.not.include('unhandled error')
        const [lead] = (await daemon.db('leads').where({customer_id: tenant.customer.id})) as Array<{contact_name: string}>
        expect(lead?.contact_name).to.equal('Ann')
        if (key) {
          // The key is free again: the retry is written once the rows are.
          const retry = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Ann Again', contact_email: 'ann@example.org'}, key)
          expect(retry.status, retry.text).to.equal(201)
          expect(retry.body.merged).to.equal(true)
        }
      } finally {
        await admin.query('SET GLOBAL innodb_lock_wait_timeout = ?', [timeout])
        await admin.end()
        await daemon?.stop()
      }
    })
  }
})
