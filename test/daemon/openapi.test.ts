import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {Ajv} from 'ajv'
import addFormatsModule from 'ajv-formats'
import {expect} from 'chai'

import {backends} from '../helpers/backends.js'
import {PROJECT_ROOT} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {type Json, rawRequest, resolveRefs as resolve, unknownMethod} from '../helpers/openapi.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

describe('OpenAPI document', function () {
  const backend = backends()[0]!
  let daemon: TestDaemon
  let broken: TestDaemon
  let unavailable: TestDaemon
  let document: Json
  let tenant: TestTenant
  let webhookId: string
  const ajv = addFormats(new Ajv({strict: false, allErrors: true}))

  before(async function () {
    const lookup = async () => [{address: '93.184.216.34', family: 4 as const}]
    daemon = await startTestDaemon(backend, {limitsCacheTtlMs: 0, lookup})
    broken = await startTestDaemon(backend)
    await broken.db.destroy()
    // A database that refuses connections (a server down, a cluster node without quorum): every connection the daemon asks for is refused.
    unavailable = await startTestDaemon(backend)
    const refused = Object.assign(new Error('connect ECONNREFUSED'), {code: 'ECONNREFUSED'})
    Object.assign(unavailable.db.client, {acquireConnection: () => Promise.reject(refused)})
    document = (await daemon.request('/openapi.json')).body
    tenant = await newTenant(daemon.services, undefined, {roomy: true})
    webhookId = (await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://hooks.example.com/doc', event_types: ['lead.created']})).webhook.id
  })
  after(async function () {
    await daemon.stop()
    await broken.stop().catch(() => undefined)
    await unavailable.stop().catch(() => undefined)
  })

  it('is served at /openapi.json without credentials and passes redocly lint', async function () {
    expect(document.openapi).to.equal('3.1.0')
    const file = path.join(os.tmpdir(), `openapi-${process.pid}.json`)
    fs.writeFileSync(file, JSON.stringify(document))
    const output = await new Promise<{code: number; text: string}>((done) =>
      execFile(
        path.join(PROJECT_ROOT, 'node_modules/.bin/redocly'),
        ['lint', file, '--config', path.join(PROJECT_ROOT, 'redocly.yaml')],
        {env: {...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true'}},
        (error, stdout, stderr) => done({code: error ? Number(error.code ?? 1) : 0, text: stdout + stderr}),
      ),
    )
    fs.rmSync(file, {force: true})
    expect(output.code, output.text).to.equal(0)
    expect(output.text).to.include('Your API description is valid')
    expect(output.text).not.to.match(/You have \d+ warnings?/)
  })

  it('documents every endpoint of the scope table, with its scope', function () {
    const operations = Object.entries(document.paths as Json).flatMap(([p, methods]) =>
      Object.entries(methods as Json).map(([method, op]) => ({
        key: `${method.toUpperCase()} ${p.replace('{id}', ':id')}`,
        scope: (op as Json)['x-required-scope'],
      })),
    )
    expect(operations.filter((op) => op.scope).map((op) => `${op.key} ${op.scope}`)).to.have.members([
      'GET /api/agents/crm/leads public_api:leads:read',
      'POST /api/agents/crm/leads public_api:leads:write',
      'POST /api/agents/crm/leads/bulk public_api:leads:write',
      'POST /api/agents/crm/lead-webhooks public_api:webhooks:manage',
      'GET /api/agents/crm/lead-webhooks public_api:webhooks:manage',
      'PATCH /api/agents/crm/lead-webhooks/:id public_api:webhooks:manage',
      'DELETE /api/agents/crm/lead-webhooks/:id public_api:webhooks:manage',
      'POST /api/agents/crm/lead-webhooks/:id/recover public_api:webhooks:manage',
    ])
  })

  it('matches the real daemon for every documented response', async function () {
    this.timeout(60_000)
    const json = {'content-type': 'application/json'}
    const as = (who: TestTenant, token = who.token) => ({token, customerId: who.customer.id})
    const send = (d: TestDaemon, method: string, p: string, body?: unknown, headers: Record<string, string> = {}, auth = as(tenant)) =>
      d.request(p, {
        method,
        ...auth,
        headers: {...json, ...headers},
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      })
    const limited = async (bulk: boolean) => {
      const who = await newTenant(daemon.services)
      await daemon.services.rateLimits.set({type: 'customer', id: who.customer.id}, bulk ? {bulkPerMinute: 1} : {perMinute: 1})
      return who
    }
    const scopeless = async (scope: string) => {
      const others = ['public_api:leads:read', 'public_api:leads:write', 'public_api:webhooks:manage'].filter(
        (s) => s !== scope,
      ) as Array<'public_api:leads:read'>
      return (await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: others})).token
    }
    const twice = async (method: string, p: string, body: unknown, bulk: boolean) => {
      const who = await limited(bulk)
      await send(daemon, method, p, body, {}, as(who))
      return send(daemon, method, p, body, {}, as(who))
    }
    const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString()
    const freshWebhook = async () =>
      (await daemon.services.webhooks.create(tenant.customer.id, {url: 'https://hooks.example.com/tmp', event_types: ['lead.created']})).webhook.id

    // A method a probe does not serve is a keyless request: past the address's 100 a minute, a 429.
    const overBudget = async (probe: string) => {
      const send = () => rawRequest(daemon.url + probe, 'TRACE', {}, undefined, '127.0.0.7')
      let response = await send()
      for (let request = 0; request < 100 && response.status !== 429; request++) response = await send()
      return response
    }

    const LIST = '/api/agents/crm/leads'
    const BULK = '/api/agents/crm/leads/bulk'
    const HOOKS = '/api/agents/crm/lead-webhooks'
    const big = (bytes: number) => JSON.stringify({leads: [{contact_name: 'x'.repeat(bytes)}]})
    const scenarios: Record<string, () => Promise<TestResponse>> = {
      'GET /api/agents/crm/leads 200': () => send(daemon, 'GET', `${LIST}?include_custom_fields=true`),
      'GET /api/agents/crm/leads 400': () => send(daemon, 'GET', `${LIST}?limit=0`),
      'GET /api/agents/crm/leads 401': () => daemon.request(LIST),
      'GET /api/agents/crm/leads 403': async () => send(daemon, 'GET', LIST, undefined, {}, as(tenant, await scopeless('public_api:leads:read'))),
      'GET /api/agents/crm/leads 429': () => twice('GET', LIST, undefined, false),
      'GET /api/agents/crm/leads 500': () => send(broken, 'GET', LIST),
      'GET /api/agents/crm/leads 503': () => send(unavailable, 'GET', LIST),
      'POST /api/agents/crm/leads 201': () => send(daemon, 'POST', LIST, {contact_name: 'Doc', custom_fields: {lead_line: 'buyer'}}),
      'POST /api/agents/crm/leads 400': () => send(daemon, 'POST', LIST, {}),
      'POST /api/agents/crm/leads 401': () => daemon.request(LIST, {method: 'POST'}),
      'POST /api/agents/crm/leads 403': async () => send(daemon, 'POST', LIST, {contact_name: 'x'}, {}, as(tenant, await scopeless('public_api:leads:write'))),
      'POST /api/agents/crm/leads 409': async () => {
        await send(daemon, 'POST', LIST, {contact_name: 'a'}, {'idempotency-key': 'doc-409'})
        return send(daemon, 'POST', LIST, {contact_name: 'b'}, {'idempotency-key': 'doc-409'})
      },
      'POST /api/agents/crm/leads 413': () => send(daemon, 'POST', LIST, JSON.stringify({contact_name: 'x'.repeat(1_100_000)})),
      'POST /api/agents/crm/leads 415': () => send(daemon, 'POST', LIST, 'x', {'content-type': 'text/plain'}),
      'POST /api/agents/crm/leads 429': () => twice('POST', LIST, {contact_name: 'limited'}, false),
      'POST /api/agents/crm/leads 500': () => send(broken, 'POST', LIST, {contact_name: 'x'}),
      'POST /api/agents/crm/leads 503': () => send(unavailable, 'POST', LIST, {contact_name: 'x'}),
      'POST /api/agents/crm/leads/bulk 200': () =>
        send(daemon, 'POST', BULK, {leads: [{contact_name: 'ok'}, {contact_email: 'bad'}, {contact_name: 'f', custom_fields: {zz: 1}}]}),
      'POST /api/agents/crm/leads/bulk 400': () => send(daemon, 'POST', BULK, {leads: []}),
      'POST /api/agents/crm/leads/bulk 401': () => daemon.request(BULK, {method: 'POST'}),
      'POST /api/agents/crm/leads/bulk 403': async () =>
        send(daemon, 'POST', BULK, {leads: [{contact_name: 'x'}]}, {}, as(tenant, await scopeless('public_api:leads:write'))),
      'POST /api/agents/crm/leads/bulk 409': async () => {
        await send(daemon, 'POST', BULK, {leads: [{contact_name: 'a'}]}, {'idempotency-key': 'doc-bulk-409'})
        return send(daemon, 'POST', BULK, {leads: [{contact_name: 'b'}]}, {'idempotency-key': 'doc-bulk-409'})
      },
      'POST /api/agents/crm/leads/bulk 413': () => send(daemon, 'POST', BULK, big(10 * 1024 * 1024 + 10)),
      'POST /api/agents/crm/leads/bulk 415': () => send(daemon, 'POST', BULK, 'x', {'content-type': 'text/csv'}),
      'POST /api/agents/crm/leads/bulk 429': () => twice('POST', BULK, {leads: [{contact_name: 'x'}]}, true),
      'POST /api/agents/crm/leads/bulk 500': () => send(broken, 'POST', BULK, {leads: [{contact_name: 'x'}]}),
      'POST /api/agents/crm/leads/bulk 503': () => send(unavailable, 'POST', BULK, {leads: [{contact_name: 'x'}]}),
      'POST /api/agents/crm/lead-webhooks 201': () => send(daemon, 'POST', HOOKS, {url: 'https://hooks.example.com/new', event_types: ['lead.created']}),
      'POST /api/agents/crm/lead-webhooks 400': () => send(daemon, 'POST', HOOKS, {url: 'http://hooks.example.com/', event_types: ['lead.created']}),
      'POST /api/agents/crm/lead-webhooks 401': () => daemon.request(HOOKS, {method: 'POST'}),
      'POST /api/agents/crm/lead-webhooks 403': async () => send(daemon, 'POST', HOOKS, {}, {}, as(tenant, await scopeless('public_api:webhooks:manage'))),
      'POST /api/agents/crm/lead-webhooks 409': async () => {
        await send(daemon, 'POST', HOOKS, {url: 'https://hooks.example.com/a', event_types: ['lead.created']}, {'idempotency-key': 'doc-hook-409'})
        return send(daemon, 'POST', HOOKS, {url: 'https://hooks.example.com/b', event_types: ['lead.created']}, {'idempotency-key': 'doc-hook-409'})
      },
      'POST /api/agents/crm/lead-webhooks 413': () => send(daemon, 'POST', HOOKS, JSON.stringify({description: 'x'.repeat(1_100_000)})),
      'POST /api/agents/crm/lead-webhooks 415': () => send(daemon, 'POST', HOOKS, 'x', {'content-type': 'text/plain'}),
      'POST /api/agents/crm/lead-webhooks 429': () => twice('POST', HOOKS, {url: 'https://hooks.example.com/l', event_types: ['lead.created']}, false),
      'POST /api/agents/crm/lead-webhooks 500': () => send(broken, 'POST', HOOKS, {url: 'https://hooks.example.com/', event_types: ['lead.created']}),
      'POST /api/agents/crm/lead-webhooks 503': () => send(unavailable, 'POST', HOOKS, {url: 'https://hooks.example.com/', event_types: ['lead.created']}),
      'GET /api/agents/crm/lead-webhooks 200': () => send(daemon, 'GET', HOOKS),
      'GET /api/agents/crm/lead-webhooks 401': () => daemon.request(HOOKS),
      'GET /api/agents/crm/lead-webhooks 403': async () => send(daemon, 'GET', HOOKS, undefined, {}, as(tenant, await scopeless('public_api:webhooks:manage'))),
      'GET /api/agents/crm/lead-webhooks 429': () => twice('GET', HOOKS, undefined, false),
      'GET /api/agents/crm/lead-webhooks 500': () => send(broken, 'GET', HOOKS),
      'GET /api/agents/crm/lead-webhooks 503': () => send(unavailable, 'GET', HOOKS),
      'PATCH /api/agents/crm/lead-webhooks/{id} 200': () => send(daemon, 'PATCH', `${HOOKS}/${webhookId}`, {rotate_secret: true, description: 'doc'}),
      'PATCH /api/agents/crm/lead-webhooks/{id} 400': () => send(daemon, 'PATCH', `${HOOKS}/${webhookId}`, {timeout_seconds: 0}),
      'PATCH /api/agents/crm/lead-webhooks/{id} 401': () => daemon.request(`${HOOKS}/${webhookId}`, {method: 'PATCH'}),
      'PATCH /api/agents/crm/lead-webhooks/{id} 403': async () =>
        send(daemon, 'PATCH', `${HOOKS}/${webhookId}`, {}, {}, as(tenant, await scopeless('public_api:webhooks:manage'))),
      'PATCH /api/agents/crm/lead-webhooks/{id} 404': () => send(daemon, 'PATCH', `${HOOKS}/wh_000000000000000000000000`, {description: 'x'}),
      'PATCH /api/agents/crm/lead-webhooks/{id} 409': async () => {
        const held = await freshWebhook()
        await daemon.services.webhooks.setActive(held, false)
        return send(daemon, 'PATCH', `${HOOKS}/${held}`, {is_active: true})
      },
      'PATCH /api/agents/crm/lead-webhooks/{id} 413': () =>
        send(daemon, 'PATCH', `${HOOKS}/${webhookId}`, JSON.stringify({description: 'x'.repeat(1_100_000)})),
      'PATCH /api/agents/crm/lead-webhooks/{id} 415': () => send(daemon, 'PATCH', `${HOOKS}/${webhookId}`, 'x', {'content-type': 'text/plain'}),
      'PATCH /api/agents/crm/lead-webhooks/{id} 429': () => twice('PATCH', `${HOOKS}/wh_000000000000000000000000`, {description: 'x'}, false),
      'PATCH /api/agents/crm/lead-webhooks/{id} 500': () => send(broken, 'PATCH', `${HOOKS}/${webhookId}`, {description: 'x'}),
      'PATCH /api/agents/crm/lead-webhooks/{id} 503': () => send(unavailable, 'PATCH', `${HOOKS}/${webhookId}`, {description: 'x'}),
      'DELETE /api/agents/crm/lead-webhooks/{id} 200': async () => send(daemon, 'DELETE', `${HOOKS}/${await freshWebhook()}`),
      'DELETE /api/agents/crm/lead-webhooks/{id} 401': () => daemon.request(`${HOOKS}/${webhookId}`, {method: 'DELETE'}),
      'DELETE /api/agents/crm/lead-webhooks/{id} 403': async () =>
        send(daemon, 'DELETE', `${HOOKS}/${webhookId}`, undefined, {}, as(tenant, await scopeless('public_api:webhooks:manage'))),
      'DELETE /api/agents/crm/lead-webhooks/{id} 404': () => send(daemon, 'DELETE', `${HOOKS}/wh_000000000000000000000000`),
      'DELETE /api/agents/crm/lead-webhooks/{id} 429': () => twice('DELETE', `${HOOKS}/wh_000000000000000000000000`, undefined, false),
      'DELETE /api/agents/crm/lead-webhooks/{id} 500': () => send(broken, 'DELETE', `${HOOKS}/${webhookId}`),
      'DELETE /api/agents/crm/lead-webhooks/{id} 503': () => send(unavailable, 'DELETE', `${HOOKS}/${webhookId}`),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 202': () => send(daemon, 'POST', `${HOOKS}/${webhookId}/recover`, {since: hourAgo()}),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 400': () => send(daemon, 'POST', `${HOOKS}/${webhookId}/recover`, {since: 'yesterday'}),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 401': () => daemon.request(`${HOOKS}/${webhookId}/recover`, {method: 'POST'}),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 403': async () =>
        send(daemon, 'POST', `${HOOKS}/${webhookId}/recover`, {since: hourAgo()}, {}, as(tenant, await scopeless('public_api:webhooks:manage'))),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 404': () => send(daemon, 'POST', `${HOOKS}/wh_000000000000000000000000/recover`, {since: hourAgo()}),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 409': async () => {
        const disabled = await freshWebhook()
        await send(daemon, 'PATCH', `${HOOKS}/${disabled}`, {is_active: false})
        return send(daemon, 'POST', `${HOOKS}/${disabled}/recover`, {since: hourAgo()})
      },
      'POST /api/agents/crm/lead-webhooks/{id}/recover 413': () =>
        send(daemon, 'POST', `${HOOKS}/${webhookId}/recover`, JSON.stringify({since: hourAgo(), padding: 'x'.repeat(1_100_000)})),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 415': () => send(daemon, 'POST', `${HOOKS}/${webhookId}/recover`, 'x', {'content-type': 'text/plain'}),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 429': () => twice('POST', `${HOOKS}/wh_000000000000000000000000/recover`, {since: hourAgo()}, false),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 500': () => send(broken, 'POST', `${HOOKS}/${webhookId}/recover`, {since: hourAgo()}),
      'POST /api/agents/crm/lead-webhooks/{id}/recover 503': () => send(unavailable, 'POST', `${HOOKS}/${webhookId}/recover`, {since: hourAgo()}),
      'GET /healthz 200': () => daemon.request('/healthz'),
      'GET /healthz 429': () => overBudget('/healthz'),
      'GET /readyz 200': () => daemon.request('/readyz'),
      'GET /readyz 429': () => overBudget('/readyz'),
      'GET /readyz 503': () => broken.request('/readyz'),
    }

    // Every path answers a method it does not serve with 405, and one HTTP does not have with 501.
    const concrete = (p: string) => p.replace('{id}', webhookId)
    const credentials = (p: string): Record<string, string> =>
      p.startsWith('/api/') ? {authorization: `Bearer ${tenant.token}`, 'x-customer-id': tenant.customer.id} : {}
    for (const [p, methods] of Object.entries(document.paths as Json)) {
      for (const method of Object.keys(methods as Json)) {
        scenarios[`${method.toUpperCase()} ${p} 405`] = () => rawRequest(daemon.url + concrete(p), 'TRACE', credentials(p))
        scenarios[`${method.toUpperCase()} ${p} 501`] = () => unknownMethod(daemon.url, concrete(p))
      }
    }

    const checked: string[] = []
    for (const [p, methods] of Object.entries(document.paths as Json)) {
      for (const [method, op] of Object.entries(methods as Json)) {
        for (const [status, documented] of Object.entries((op as Json).responses as Json)) {
          const key = `${method.toUpperCase()} ${p} ${status}`
          const scenario = scenarios[key]
          expect(scenario, `no scenario for the documented response ${key}`).to.be.a('function')
          const response = await scenario!()
          expect(response.status, `${key}: ${response.text.slice(0, 300)}`).to.equal(Number(status))
          const schema = resolve((documented as Json).content['application/json'].schema, document) as Json
          const validate = ajv.compile(schema)
          expect(validate(response.body), `${key} body: ${ajv.errorsText(validate.errors)}`).to.equal(true)
          for (const [header, declared] of Object.entries(((documented as Json).headers ?? {}) as Json)) {
            const value = response.headers.get(header)
            if (!declared.required && value === null) continue
            expect(value, `${key} header ${header}`).to.be.a('string')
            const validateHeader = ajv.compile(declared.schema)
            expect(validateHeader(declared.schema.type === 'integer' ? Number(value) : value), `${key} header ${header}: ${value}`).to.equal(true)
          }
          checked.push(key)
        }
      }
    }
    expect(checked.length).to.equal(Object.keys(scenarios).length)
  })

  it('accepts exactly the lead bodies and bulk rows the service accepts, contact rule and email rule included', async function () {
    const leadInput = ajv.compile(resolve(document.components.schemas.LeadInput, document) as Json)
    const bodies: Json[] = [
      {},
      {contact_name: null},
      {contact_name: '   '},
      {contact_name: 'Ada'},
      {contact_phone: '+1 555 010 2000'},
      {contact_email: 'ada@example.org'},
      {contact_email: '0@com'},
      {contact_name: null, contact_email: 'grace@example.org'},
      {contact_name: 5},
      {contact_name: 'Ada', custom_fields: {note: 'bell\u0007'}},
      {contact_name: 'Ada', nickname: 'A'},
    ]
    for (const [index, body] of bodies.entries()) {
      const single = await daemon.request('/api/agents/crm/leads', {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json'},
        body: JSON.stringify(body),
      })
      const bulk = await daemon.request('/api/agents/crm/leads/bulk', {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({leads: [body], dry_run: true}),
      })
      const documented = leadInput(body)
      expect(single.status, `${index} ${JSON.stringify(body)}: ${single.text}`).to.equal(documented ? 201 : 400)
      // The single create came first, so a valid row with an email or phone merges into its lead.
      expect(bulk.body.results[0].status, `${index} ${JSON.stringify(body)} as a bulk row`).to.be.oneOf(documented ? ['created', 'updated'] : ['failed'])
    }
  })

  it('states a webhook url the service accepts with LEADS_WEBHOOK_ALLOW_HOSTS, and refuses what it refuses', async function () {
    const allowing = await startTestDaemon(backend, {}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost:8443'})
    try {
      const who = await newTenant(allowing.services)
      const createWebhook = ajv.compile(resolve(document.components.requestBodies.CreateWebhook.content['application/json'].schema, document) as Json)
      for (const url of [
        'https://localhost:8443/hooks',
        'https://hooks.example.com/leads',
        'http://hooks.example.com/leads',
        'https://user:pw@hooks.example.com/',
        'ftp://x.example/',
      ]) {
        const body = {url, event_types: ['lead.created']}
        const response = await allowing.request('/api/agents/crm/lead-webhooks', {
          method: 'POST',
          token: who.token,
          customerId: who.customer.id,
          headers: {'content-type': 'application/json'},
          body: JSON.stringify(body),
        })
        const documented = createWebhook(body)
        expect(documented, url).to.equal(url.startsWith('https://') && !url.includes('@'))
        if (!documented) expect(response.status, `${url}: ${response.text}`).to.equal(400)
        if (url.includes('localhost')) expect(response.status, `${url}: ${response.text}`).to.equal(201)
      }
    } finally {
      await allowing.stop()
    }
  })

  it('declares Idempotent-Replayed on a replayed 400, which carries it', async function () {
    for (const operationPath of ['/api/agents/crm/leads', '/api/agents/crm/leads/bulk']) {
      expect(document.paths[operationPath].post.responses['400'].headers).to.have.property('Idempotent-Replayed')
    }
    const send = () =>
      daemon.request('/api/agents/crm/leads', {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json', 'idempotency-key': 'doc-replayed-400'},
        body: JSON.stringify({contact_name: 'x', stage_slug: 'nope'}),
      })
    expect((await send()).headers.get('idempotent-replayed')).to.equal(null)
    const replayed = await send()
    expect(replayed.status).to.equal(400)
    expect(replayed.headers.get('idempotent-replayed')).to.equal('true')
  })
})
