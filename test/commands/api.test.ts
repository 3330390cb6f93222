import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {runCli, runCliAtWidth} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

/** `leads api METHOD PATH`: any endpoint, authenticated with the client settings in force, as gh api does. */
describe('leads api', function () {
  let daemon: TestDaemon
  let tenant: TestTenant
  const env = () => ({LEADS_BASE_URL: daemon.url, LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id})

  before(async function () {
    daemon = await startTestDaemon(backends()[0]!)
  })
  beforeEach(async function () {
    tenant = await newTenant(daemon.services)
  })
  after(async function () {
    await daemon.stop()
  })

  it('GETs with fields as the query string, and prints the answer as sent into a pipe', async function () {
    await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Listed'})
    const result = await runCli(['api', 'GET', '/api/agents/crm/leads', '-f', 'limit=1', '-F', 'include_custom_fields=true'], env())
    expect(result.code, result.stderr).to.equal(0)
    expect(result.stdout.trim().split('\n')).to.have.length(1)
    const page = JSON.parse(result.stdout)
    expect(page).to.include({total: 1, limit: 1})
    expect(page.leads[0]).to.include({contact_name: 'Listed'}).and.to.have.property('custom_fields')
  })

  it('POSTs fields as a JSON body with an Idempotency-Key of its own', async function () {
    const created = await runCli(['api', 'POST', '/api/agents/crm/leads', '-f', 'contact_name=Ada Lovelace', '-f', 'contact_email=ada@example.org'], env())
    expect(created.code, created.stderr).to.equal(0)
    expect(JSON.parse(created.stdout).lead).to.include({contact_name: 'Ada Lovelace', contact_email: 'ada@example.org'})
    const again = await runCli(['api', 'POST', '/api/agents/crm/leads', '-f', 'contact_name=Ada Lovelace', '-f', 'contact_email=ada@example.org'], env())
    expect(JSON.parse(again.stdout).merged, 'a second POST is a new request (fresh key), merged by email').to.equal(true)
  })

  it('nests fields as gh api does: key[sub]= into an object, key[]= into an array, key[][sub]= into an array of objects', async function () {
    await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
    const single = await runCli(
      ['api', 'POST', '/api/agents/crm/leads', '-f', 'contact_name=Nested', '-F', 'custom_fields[budget]=12', '-f', 'custom_fields[lead_line]=buyer'],
      env(),
    )
    expect(single.code, single.stderr).to.equal(0)
    expect(JSON.parse(single.stdout).lead.custom_fields).to.deep.equal({budget: 12, lead_line: 'buyer'})
    const bulk = await runCli(
      [
        'api',
        'POST',
        '/api/agents/crm/leads/bulk',
        ...['-f', 'leads[][contact_name]=First', '-f', 'leads[][contact_email]=first@example.org', '-F', 'leads[][custom_fields][budget]=1'],
        ...['-f', 'leads[][contact_name]=Second', '-F', 'dry_run=true'],
      ],
      env(),
    )
    expect(bulk.code, bulk.stderr).to.equal(0)
    expect(JSON.parse(bulk.stdout)).to.deep.include({dry_run: true, summary: {received: 2, created: 2, updated: 0, skipped: 0, failed: 0}})
    const odd = await runCli(['api', 'POST', '/api/agents/crm/leads', '-f', 'custom_fields[budget=1'], env())
    expect(odd.code).to.equal(1)
    expect(odd.stderr).to.equal('Error: a field name is key, key[sub] or key[], got "custom_fields[budget" (hint: as gh api reads them)\n')
  })

  it('follows next_cursor with --paginate, one page per line into a pipe', async function () {
    for (const name of ['One', 'Two', 'Three']) await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: name})
    const result = await runCli(['api', 'GET', '/api/agents/crm/leads', '-f', 'limit=1', '-f', 'sort_by=created_at', '-f', 'sort_dir=asc', '--paginate'], env())
    expect(result.code, result.stderr).to.equal(0)
    const pages = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {leads: Array<{contact_name: string}>; next_cursor: string | null})
    expect(pages.flatMap((page) => page.leads.map((lead) => lead.contact_name))).to.deep.equal(['One', 'Two', 'Three'])
    expect(pages.at(-1)!.next_cursor).to.equal(null)
  })

  it('prints the status and RateLimit headers on stderr with -i, and indented JSON at a terminal', async function () {
    const included = await runCli(['api', 'GET', '/api/agents/crm/leads', '-i'], env())
    expect(included.stderr).to.match(/^HTTP 200 OK\nRateLimit-Limit: 60\nRateLimit-Remaining: \d+\nRateLimit-Reset: \d+\n$/)
    expect(JSON.parse(included.stdout)).to.include({total: 0})
    const shown = await runCliAtWidth(['api', 'GET', '/api/agents/crm/leads'], env(), 120)
    expect(shown.stdout.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')).to.include('{\n  "leads": [],\n  "total": 0,')
  })

  it('prints an answer that is not a 2xx and exits 1 with one line; refuses a path without /', async function () {
    const reader = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:read']})
    const forbidden = await runCli(['api', 'GET', '/api/agents/crm/lead-webhooks'], {...env(), LEADS_API_TOKEN: reader.token})
    expect(forbidden.code).to.equal(1)
    expect(JSON.parse(forbidden.stdout).error).to.include({type: 'authorization_error', code: 403})
    expect(forbidden.stderr).to.match(/^Error: HTTP 403: .*lacks the scope public_api:webhooks:manage/)
    const relative = await runCli(['api', 'GET', 'api/agents/crm/leads'], env())
    expect(relative.code).to.equal(1)
    expect(relative.stderr).to.equal('Error: the path must start with /, got "api/agents/crm/leads" (hint: e.g. /api/agents/crm/leads)\n')
    expect(forbidden.stdout + forbidden.stderr).to.not.include(reader.token)
  })
})
