import {expect} from 'chai'
import fc from 'fast-check'

import type {Scope} from '../../src/keys/scopes.js'
import {forEachBackend} from '../helpers/backends.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

/**
 * Tenant isolation as a property: generated sequences of operations by three customers, each
 * with keys of every combination of scopes (creates, merges, bulk, lists with every filter and
 * cursor, webhooks), plus deliveries read through the operator's service. No answer ever holds
 * another customer's lead, webhook or delivery; every attempt across customers is refused (403
 * for another customer's id in x-customer-id, 404 for another customer's webhook); a key without
 * the scope gets 403.
 */
const SEED = Number(process.env['LEADS_FUZZ_SEED'] ?? 20261123)
const RUNS = Number(process.env['LEADS_FUZZ_RUNS'] ?? 25)

const LEADS = '/api/agents/crm/leads'
const WEBHOOKS = '/api/agents/crm/lead-webhooks'
const ALL_SCOPES: Scope[] = ['public_api:leads:read', 'public_api:leads:write', 'public_api:webhooks:manage']
const ID = /\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|wh_[0-9a-f]{24})\b/g

/** One customer and a key for every subset of the scopes. */
interface Tenant {
  customerId: string
  keys: Array<{token: string; scopes: Scope[]}>
}

type Operation =
  | {kind: 'create'; tenant: number; key: number; person: number; name: string}
  | {kind: 'bulk'; tenant: number; key: number; people: number[]}
  | {kind: 'list'; tenant: number; key: number; query: string; pages: number}
  | {kind: 'webhook-create'; tenant: number; key: number}
  | {kind: 'webhook-touch'; tenant: number; key: number; owner: number; method: 'PATCH' | 'DELETE'}
  | {kind: 'webhook-list'; tenant: number; key: number}
  | {kind: 'other-customer'; tenant: number; key: number; target: number; path: string}
  | {kind: 'deliveries'; tenant: number}

const tenantIndex = fc.integer({min: 0, max: 2})
const keyIndex = fc.integer({min: 0, max: 7})
const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    tenant: tenantIndex,
    key: keyIndex,
    person: fc.integer({min: 0, max: 5}),
    name: fc.string({unit: 'grapheme', minLength: 1, maxLength: 12}),
  }),
  fc.record({
    kind: fc.constant('bulk' as const),
    tenant: tenantIndex,
    key: keyIndex,
    people: fc.array(fc.integer({min: 0, max: 5}), {minLength: 1, maxLength: 4}),
  }),
  fc.record({
    kind: fc.constant('list' as const),
    tenant: tenantIndex,
    key: keyIndex,
    query: fc.constantFrom(
      '',
      'status=active',
      'search=person',
      'search=shared',
      'lead_line=buyer',
      'sort_by=created_at&sort_dir=desc',
      'include_custom_fields=true',
      'sync=true',
      'limit=1',
      'offset=1&limit=2',
      'updated_since=2000-01-01T00:00:00Z',
    ),
    pages: fc.integer({min: 1, max: 3}),
  }),
  fc.record({kind: fc.constant('webhook-create' as const), tenant: tenantIndex, key: keyIndex}),
  fc.record({
    kind: fc.constant('webhook-touch' as const),
    tenant: tenantIndex,
    key: keyIndex,
    owner: tenantIndex,
    method: fc.constantFrom('PATCH' as const, 'DELETE' as const),
  }),
  fc.record({kind: fc.constant('webhook-list' as const), tenant: tenantIndex, key: keyIndex}),
  fc.record({
    kind: fc.constant('other-customer' as const),
    tenant: tenantIndex,
    key: keyIndex,
    target: tenantIndex,
    path: fc.constantFrom(LEADS, `${LEADS}?search=shared`, WEBHOOKS),
  }),
  fc.record({kind: fc.constant('deliveries' as const), tenant: tenantIndex}),
)

describe('tenant isolation (generated operations)', function () {
  this.timeout(180_000)

  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenants: Tenant[]
    /** Which customer each lead, webhook and delivery id seen so far belongs to. */
    const owner = new Map<string, string>()
    const webhooksOf = new Map<string, string[]>()

    before(async function () {
      // No worker: the webhooks registered here are never sent anything.
      daemon = await startTestDaemon(backend, {role: 'api', lookup: async () => [{address: '93.184.216.34', family: 4}]})
      tenants = []
      for (let t = 0; t < 3; t++) {
        const customer = await daemon.services.customers.create({name: `isolated ${t}`})
        await daemon.services.rateLimits.set({type: 'customer', id: customer.id}, {perMinute: 100_000, perHour: 100_000, bulkPerMinute: 10_000})
        const keys: Tenant['keys'] = []
        for (let mask = 0; mask < 8; mask++) {
          const scopes = ALL_SCOPES.filter((_, bit) => mask & (1 << bit))
          // A key needs a scope; the empty subset gets read only, which the masks cover anyway.
          const issued = await daemon.services.keys.issue({customerId: customer.id, scopes: scopes.length > 0 ? scopes : ['public_api:leads:read']})
          keys.push({token: issued.token, scopes: scopes.length > 0 ? scopes : ['public_api:leads:read']})
        }
        tenants.push({customerId: customer.id, keys})
        webhooksOf.set(customer.id, [])
      }
    })
    after(async function () {
      // Deleting the webhooks cancels their pending deliveries: no later daemon's sweeper sends them.
      for (const {customerId} of tenants)
        for (const webhook of await daemon.services.webhooks.list(customerId)) await daemon.services.webhooks.delete(customerId, webhook.id)
      await daemon.stop()
    })

    /** Every known id in the answer belongs to `customerId`, and so does every customer_id field. */
    function expectOnlyOwn(response: TestResponse, customerId: string, what: string): void {
      for (const id of response.text.match(ID) ?? []) {
        const belongs = owner.get(id)
        if (belongs !== undefined && id !== customerId) expect(belongs, `${what} returned ${id} of customer ${belongs}`).to.equal(customerId)
      }
      for (const other of tenants.map((tenant) => tenant.customerId).filter((id) => id !== customerId)) {
        expect(response.text, `${what} mentions customer ${other}`).not.to.include(other)
      }
    }

    async function call(tenant: Tenant, key: number, method: string, path: string, body?: unknown, customerId = tenant.customerId): Promise<TestResponse> {
      return daemon.request(path, {
        method,
        token: tenant.keys[key]!.token,
        customerId,
        headers: body === undefined ? {} : {'content-type': 'application/json'},
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    }

    /** The status a key gets for an endpoint: 403 without the scope it needs, else what the endpoint says. */
    const allowed = (tenant: Tenant, key: number, scope: Scope) => tenant.keys[key]!.scopes.includes(scope)

    async function perform(op: Operation): Promise<void> {
      const tenant = tenants[op.tenant]!
      const own = tenant.customerId
      const what = `${op.kind} as customer ${op.tenant}`
      if (op.kind === 'create') {
        // People 0-2 are the customer's own; 3-5 have the same email in every customer (a merge must stay within it).
        const email = op.person < 3 ? `person${op.person}.${op.tenant}@example.org` : `shared${op.person}@example.org`
        const response = await call(tenant, op.key, 'POST', LEADS, {contact_name: op.name, contact_email: email, custom_fields: {lead_line: 'buyer'}})
        if (!allowed(tenant, op.key, 'public_api:leads:write')) return void expect(response.status, what).to.equal(403)
        expect(response.status, `${what}: ${response.text}`).to.equal(201)
        expect(owner.get(response.body.lead.id) ?? own, `${what} merged into another customer's lead`).to.equal(own)
        owner.set(response.body.lead.id, own)
        expectOnlyOwn(response, own, what)
      } else if (op.kind === 'bulk') {
        const leads = op.people.map((person) => ({
          contact_name: `bulk ${person}`,
          contact_email: person < 3 ? `person${person}.${op.tenant}@example.org` : `shared${person}@example.org`,
        }))
        const response = await call(tenant, op.key, 'POST', `${LEADS}/bulk`, {leads})
        if (!allowed(tenant, op.key, 'public_api:leads:write')) return void expect(response.status, what).to.equal(403)
        expect(response.status, `${what}: ${response.text}`).to.equal(200)
        for (const result of response.body.results) {
          expect(owner.get(result.lead_id) ?? own, `${what} touched another customer's lead`).to.equal(own)
          owner.set(result.lead_id, own)
        }
        expectOnlyOwn(response, own, what)
      } else if (op.kind === 'list') {
        let path = `${LEADS}?${op.query}`
        for (let page = 0; page < op.pages; page++) {
          const response = await call(tenant, op.key, 'GET', path)
          if (!allowed(tenant, op.key, 'public_api:leads:read')) return void expect(response.status, what).to.equal(403)
          expect(response.status, `${what} ${path}: ${response.text}`).to.equal(200)
          for (const lead of response.body.leads) expect(lead.customer_id, `${what} listed another customer's lead`).to.equal(own)
          expectOnlyOwn(response, own, what)
          if (!response.body.next_cursor) break
          path = `${LEADS}?${op.query}${op.query ? '&' : ''}cursor=${encodeURIComponent(response.body.next_cursor)}`
        }
      } else if (op.kind === 'webhook-create') {
        const response = await call(tenant, op.key, 'POST', WEBHOOKS, {url: `https://hooks.example.com/${op.tenant}`, event_types: ['lead.created']})
        if (!allowed(tenant, op.key, 'public_api:webhooks:manage')) return void expect(response.status, what).to.equal(403)
        if (response.status === 400 && /at most 20 webhooks/.test(response.text)) return
        expect(response.status, `${what}: ${response.text}`).to.equal(201)
        owner.set(response.body.webhook.id, own)
        webhooksOf.get(own)!.push(response.body.webhook.id)
        expectOnlyOwn(response, own, what)
      } else if (op.kind === 'webhook-touch') {
        const target = webhooksOf.get(tenants[op.owner]!.customerId)!.at(-1)
        if (target === undefined) return
        const response = await call(tenant, op.key, op.method, `${WEBHOOKS}/${target}`, op.method === 'PATCH' ? {description: 'touched'} : undefined)
        if (!allowed(tenant, op.key, 'public_api:webhooks:manage')) return void expect(response.status, what).to.equal(403)
        if (op.owner !== op.tenant) return void expect(response.status, `${what} reached customer ${op.owner}'s webhook`).to.equal(404)
        expect(response.status, `${what}: ${response.text}`).to.equal(200)
        if (op.method === 'DELETE')
          webhooksOf.set(
            own,
            webhooksOf.get(own)!.filter((id) => id !== target),
          )
        expectOnlyOwn(response, own, what)
      } else if (op.kind === 'webhook-list') {
        const response = await call(tenant, op.key, 'GET', WEBHOOKS)
        if (!allowed(tenant, op.key, 'public_api:webhooks:manage')) return void expect(response.status, what).to.equal(403)
        expect(response.status).to.equal(200)
        expect(response.body.webhooks.map((webhook: {id: string}) => webhook.id).sort(), what).to.deep.equal([...webhooksOf.get(own)!].sort())
        expectOnlyOwn(response, own, what)
      } else if (op.kind === 'other-customer') {
        const target = tenants[op.target]!.customerId
        const response = await call(tenant, op.key, 'GET', op.path, undefined, target)
        if (op.target === op.tenant) return
        expect(response.status, `${what} with customer ${op.target}'s id`).to.equal(403)
        expect(response.body.error.type).to.equal('authorization_error')
        expectOnlyOwn(response, own, what)
      } else {
        // What the operator's service says of each of this customer's webhooks holds only its deliveries.
        for (const webhookId of webhooksOf.get(own)!) {
          for (const delivery of await daemon.services.deliveries.list({webhookId, limit: 50})) {
            expect(delivery.customerId, `${what}: a delivery of another customer under ${webhookId}`).to.equal(own)
            owner.set(delivery.id, own)
          }
        }
      }
    }

    it("never answers one customer with another customer's data, and refuses every crossing", async function () {
      await fc.assert(
        fc.asyncProperty(fc.array(operation, {minLength: 5, maxLength: 15}), async (operations) => {
          for (const op of operations) await perform(op)
        }),
        {seed: SEED, numRuns: RUNS, endOnFailure: false},
      )
    })
  })
})
