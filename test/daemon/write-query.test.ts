import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {counts} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LEADS = '/api/agents/crm/leads'
const WEBHOOKS = '/api/agents/crm/lead-webhooks'

/**
 * Only GET /leads takes query parameters. On every other endpoint one is refused by name and the
 * request does nothing: `POST /leads/bulk?dry_run=true` would otherwise write for real.
 */
describe('query parameters on the endpoints that take none', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const send = (method: string, path: string, body?: unknown) =>
      daemon.request(path, {
        method,
        token: tenant.token,
        customerId: tenant.customer.id,
        ...(body === undefined ? {} : {headers: {'content-type': 'application/json'}, body: JSON.stringify(body)}),
      })

    before(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
    })
    after(async function () {
      await daemon.stop()
    })

    it('refuses a setting sent in the URL of a write, naming it and saying where it goes, and writes nothing', async function () {
      const cases: Array<[string, string, unknown, string]> = [
        ['POST', `${LEADS}/bulk?dry_run=true`, {leads: [{contact_name: 'Query Bulk'}]}, 'dry_run'],
        ['POST', `${LEADS}/bulk?on_duplicate=skip&dry_run=true`, {leads: [{contact_name: 'Query Bulk'}]}, 'on_duplicate'],
        ['POST', `${LEADS}?dry_run=1`, {contact_name: 'Query Create'}, 'dry_run'],
        ['POST', `${LEADS}?__proto__=1`, {contact_name: 'Query Create'}, '__proto__'],
        ['POST', `${LEADS}?na%E9me=x`, {contact_name: 'Query Create'}, 'na\ufffdme'],
        ['POST', WEBHOOKS + '?url=https://crm.example.com/hooks', {url: 'https://crm.example.com/hooks'}, 'url'],
      ]
      for (const [method, path, body, param] of cases) {
        const response = await send(method, path, body)
        expect(response.status, `${method} ${path}: ${response.text}`).to.equal(400)
        expect(response.body.error).to.deep.equal({
          type: 'invalid_request_error',
          code: 400,
          message: `query parameter "${param}" is not one of this endpoint's: its settings go in the JSON body`,
          param,
        })
      }
      expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
      expect((await send('GET', WEBHOOKS)).body).to.deep.equal({webhooks: []})
    })

    it('refuses one on the webhook endpoints without a body, before looking the webhook up', async function () {
      for (const path of [`${WEBHOOKS}?limit=5`, `${WEBHOOKS}/${randomUUID()}?force=true`]) {
        const response = await send(path.startsWith(`${WEBHOOKS}?`) ? 'GET' : 'DELETE', path)
        expect(response.status, `${path}: ${response.text}`).to.equal(400)
        expect(response.body.error.message).to.match(/^query parameter "(limit|force)" is not one of this endpoint's: it takes none$/)
      }
    })

    it('still takes a bare ? with nothing after it', async function () {
      const response = await send('POST', `${LEADS}?`, {contact_name: 'Bare Question Mark'})
      expect(response.status, response.text).to.equal(201)
    })
  })
})
