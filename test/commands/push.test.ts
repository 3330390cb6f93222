import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {counts} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {runCli} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

describe('leads push', function () {
  let daemon: TestDaemon
  let tenant: TestTenant
  let dir: string
  const env = () => ({LEADS_BASE_URL: daemon.url, LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id})
  const write = (name: string, text: string) => {
    const file = path.join(dir, name)
    fs.writeFileSync(file, text)
    return file
  }

  before(async function () {
    daemon = await startTestDaemon(backends()[0]!)
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-push-'))
  })
  beforeEach(async function () {
    tenant = await newTenant(daemon.services, ['public_api:leads:write', 'public_api:leads:read'])
    await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
  })
  after(async function () {
    await daemon.stop()
    fs.rmSync(dir, {recursive: true, force: true})
  })

  it('sends a CSV of 1,203 rows in 3 requests and reports failed rows by line', async function () {
    const rows = ['contact_name,contact_email,contact_phone,custom_fields.budget:number,custom_fields.lead_line']
    for (let i = 0; i < 1203; i++) {
      const email = i === 10 ? 'not-an-email' : `csv${i}@example.org`
      rows.push(`Lead ${i},${email},"+1 (555) ${String(i).padStart(3, '0')}-0000",${i * 10},${i % 2 ? 'buyer' : 'seller'}`)
    }
    const file = write('leads.csv', rows.join('\n') + '\n')
    const result = await runCli(['push', file, '--json'], env())
    expect(result.code, result.stderr).to.equal(1)
    const report = JSON.parse(result.stdout)
    expect(report.summary).to.deep.equal({received: 1203, created: 1202, updated: 0, skipped: 0, failed: 1, chunks: 3})
    expect(report.failed).to.deep.equal([
      {line: 12, message: 'field "contact_email" must be an email address of at most 254 characters', param: 'contact_email'},
    ])
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 1202, events: 0})

    const again = await runCli(['push', file, '--on-duplicate', 'skip'], env())
    expect(again.stdout).to.include('line 12: field "contact_email" must be an email address')
    expect(again.stdout.trim().split('\n').at(-1)).to.equal('1203 rows: 0 created, 0 updated, 1202 skipped, 1 failed')
  })

  it('reads NDJSON, reporting unreadable lines and unknown custom fields by line', async function () {
    const file = write(
      'leads.ndjson',
      [
        JSON.stringify({contact_name: 'One', custom_fields: {budget: 1, colour: 'red'}}),
        '',
        '{not json',
        JSON.stringify({contact_email: 'two@example.org'}),
        '[1,2]',
      ].join('\n'),
    )
    const result = await runCli(['push', file, '--json'], env())
    const report = JSON.parse(result.stdout)
    expect(report.summary).to.include({received: 4, created: 2, failed: 2})
    expect(report.failed).to.deep.equal([
      {line: 3, message: 'line is not valid JSON'},
      {line: 5, message: 'line is not a JSON object'},
    ])
    expect(report.unknown_custom_fields).to.deep.equal([{slug: 'colour', lines: [1]}])
  })

  it('writes nothing with --dry-run and exits 0 when no row failed', async function () {
    const file = write('dry.csv', 'contact_name,contact_email\nDry,dry@example.org\n')
    const result = await runCli(['push', file, '--dry-run'], env())
    expect(result.code).to.equal(0)
    expect(result.stdout.trim()).to.equal('Dry run: 1 rows: 1 created, 0 updated, 0 skipped, 0 failed')
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
  })

  it('stops before sending anything on an unknown CSV column', async function () {
    const file = write('bad.csv', 'name,email\nAda,ada@example.org\n')
    const result = await runCli(['push', file], env())
    expect(result.code).to.equal(1)
    expect(result.stderr).to.match(/^Error: unknown CSV column "name" \(hint: use contact_name, .*custom_fields\.<slug>/)
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
  })

  it('names the missing variable, and surfaces a 403 as one line with a hint', async function () {
    const file = write('one.csv', 'contact_name\nSolo\n')
    const missing = await runCli(['push', file], {LEADS_BASE_URL: daemon.url, LEADS_CUSTOMER_ID: tenant.customer.id})
    expect(missing.code).to.equal(1)
    expect(missing.stderr).to.match(/^Error: no API token given .*set LEADS_API_TOKEN/)
    const readOnly = await daemon.services.keys.issue({customerId: tenant.customer.id, scopes: ['public_api:leads:read']})
    const forbidden = await runCli(['push', file], {...env(), LEADS_API_TOKEN: readOnly.token})
    expect(forbidden.code).to.equal(1)
    expect(forbidden.stderr).to.match(/^Error: This key lacks the scope public_api:leads:write.* \(hint: check LEADS_CUSTOMER_ID/)
    expect(forbidden.stderr).not.to.include(readOnly.token)
  })
})
