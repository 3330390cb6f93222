import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {counts, postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {holdNextCommit} from '../helpers/commit-hold.js'
import {runCli, runCliJson} from '../helpers/cli.js'
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
    expect(report.dry_run).to.equal(false)
    expect(report.summary).to.deep.equal({received: 1203, created: 1202, updated: 0, skipped: 0, failed: 1, chunks: 3})
    expect(report.failed).to.deep.equal([
      {line: 12, message: 'field "contact_email" must be an email address of at most 254 characters', param: 'contact_email'},
    ])
    // Every row's result by its line: the header is line 1.
    expect(report.results).to.have.length(1203)
    expect(report.results.map((row: {line: number}) => row.line)).to.deep.equal(Array.from({length: 1203}, (_, i) => i + 2))
    expect(report.results[10]).to.deep.equal({line: 12, status: 'failed'})
    expect(report.results[0]).to.include({line: 2, status: 'created'})
    const stored = await daemon.db('leads').where({customer_id: tenant.customer.id, contact_email: 'csv0@example.org'}).first('id')
    expect(report.results[0].lead_id).to.equal(stored.id)
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 1202, events: 0})

    const again = await runCli(['push', file, '--on-duplicate', 'skip'], env())
    expect(again.stdout).to.include('line 12: field "contact_email" must be an email address')
    expect(again.stdout.trim().split('\n').at(-1)).to.equal('1203 rows: 0 created, 0 updated, 1202 skipped, 1 failed')
  })

  it('reads a pipe given with --format, as in `leads push <(leads pull) --format ndjson`', async function () {
    /** A named pipe holding `text`, as a shell's process substitution gives one. */
    const pipeOf = (name: string, text: string) => {
      const fifo = path.join(dir, name)
      execFileSync('mkfifo', [fifo])
      void fs.promises.writeFile(fifo, text)
      return fifo
    }
    const ndjson = ['{"contact_name":"Piped One","contact_email":"piped1@example.org"}', '{"contact_name":"Piped Two","contact_email":"piped2@example.org"}']
    const piped = await runCli(['push', pipeOf('leads-ndjson', ndjson.join('\n') + '\n'), '--format', 'ndjson'], env())
    expect(piped.code, piped.stderr).to.equal(0)
    expect(piped.stdout.trim()).to.equal('2 rows: 2 created, 0 updated, 0 skipped, 0 failed')
    const csv = 'contact_name,contact_email\nPiped Three,piped3@example.org\n'
    const checked = await runCli(['push', pipeOf('leads-csv', csv), '--format', 'csv', '--dry-run'], env())
    expect(checked.code, checked.stderr).to.equal(0)
    expect(checked.stdout.trim()).to.equal('Dry run, checked here, nothing sent: 1 rows: 1 valid, 0 failed')
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 2, events: 0})
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

  it("--dry-run checks every row here with the server's rules and sends nothing: no daemon, no rate limit spent", async function () {
    const file = write('dry.csv', 'contact_name,contact_email,source_type\nDry,dry@example.org,form\nBad,not-an-email,\n,,manual\nOdd,odd@example.org,fax\n')
    // Nothing listens on port 1: a dry run that sent anything would fail to connect.
    const offline = {LEADS_BASE_URL: 'http://127.0.0.1:1', LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id}
    const result = await runCli(['push', file, '--dry-run'], offline)
    expect(result.code).to.equal(1)
    expect(result.stdout.split('\n')).to.deep.equal([
      'line 3: field "contact_email" must be an email address of at most 254 characters',
      'line 4: give at least one of contact_name, contact_phone, contact_email',
      'line 5: field "source_type" must be one of form, phone_call, email, chat, sms, manual, import',
      'Dry run, checked here, nothing sent: 4 rows: 1 valid, 3 failed',
      '',
    ])
    expect(result.stderr).to.equal(
      'not checked without the server: stage slugs, custom fields, matches with existing leads (--check-on-server checks them and counts against the bulk rate limit)\n',
    )
    const json = JSON.parse((await runCli(['push', file, '--dry-run', '--json'], {})).stdout)
    expect(json).to.deep.include({dry_run: true, checked: 'locally', summary: {received: 4, valid: 1, failed: 3}})
    expect(json.failed[0]).to.deep.equal({line: 3, message: 'field "contact_email" must be an email address of at most 254 characters', param: 'contact_email'})
    expect((await runCli(['push', '--help'], {})).stdout.replace(/\s+/g, ' ')).to.include('spends no rate limit')
  })

  it('--dry-run --check-on-server lets the server count what would happen, writing nothing', async function () {
    const file = write('dry-server.csv', 'contact_name,contact_email,stage_slug\nDry,dry@example.org,new\n')
    const result = await runCli(['push', file, '--dry-run', '--check-on-server'], env())
    expect(result.code, result.stderr).to.equal(0)
    expect(result.stdout.trim()).to.equal('Dry run: 1 rows: 1 created, 0 updated, 0 skipped, 0 failed')
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
    const alone = await runCli(['push', file, '--check-on-server'], env())
    expect(alone.code).to.equal(2)
  })

  it('stops before sending anything on an unknown CSV column', async function () {
    const file = write('bad.csv', 'contact_name,email\nAda,ada@example.org\n')
    const result = await runCli(['push', file], env())
    expect(result.code).to.equal(1)
    expect(result.stderr).to.match(/^Error: unknown CSV column "email" \(hint: use contact_name, .*custom_fields\.<slug>/)
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
  })

  it('says the first line must be the header when a CSV starts with data, naming the columns it takes', async function () {
    const file = write('no-header.csv', 'Jane Doe,+15551234567,jane@example.org\nAda,+15557654321,ada@example.org\n')
    for (const dryRun of [[], ['--dry-run']]) {
      const result = await runCli(['push', file, ...dryRun], env())
      expect(result.code).to.equal(1)
      expect(result.stdout).to.equal('')
      expect(result.stderr).to.equal(
        'Error: unknown CSV column "Jane Doe" (hint: the first line must be the header naming the columns: contact_name, contact_phone, contact_email, ' +
          'stage_slug, source_platform, source_type, custom_fields.<slug>[:string|number|boolean] or custom_fields (JSON))\n',
      )
    }
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
  })

  it('refuses a CSV without a header line (empty, or blank lines only) with one line and a hint, checked here or pushed', async function () {
    for (const [name, text] of [
      ['empty.csv', ''],
      ['blank.csv', '\n  \n\n'],
    ] as const) {
      const file = write(name, text)
      for (const dryRun of [[], ['--dry-run']]) {
        const result = await runCli(['push', file, ...dryRun], env())
        expect(result.code, `${name} ${dryRun.join(' ')}`).to.equal(1)
        expect(result.stdout).to.equal('')
        expect(result.stderr).to.equal(
          `Error: ${file} has no header line; a CSV must start with one naming its columns (hint: such as contact_name,contact_phone,contact_email; see leads push --help)\n`,
        )
      }
    }
    // What pull writes when there is nothing to pull is still valid input: a header alone, or no lines of NDJSON.
    const pulledCsv = await runCli(['pull', '--no-state', '--format', 'csv'], env())
    const headerOnly = await runCliJson(['push', write('nothing.csv', pulledCsv.stdout)], env())
    expect(headerOnly.summary).to.include({received: 0, failed: 0})
    const noLines = await runCliJson(['push', write('nothing.ndjson', '')], env())
    expect(noLines.summary).to.include({received: 0, failed: 0})
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
  })

  it('stops before sending anything on a JSON array, as pull --format json writes, with a hint', async function () {
    await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Pulled', contact_email: 'pulled@example.org'})
    const pulled = await runCli(['pull', '--no-state', '--format', 'json'], env())
    const file = write('pulled.json', pulled.stdout)
    const result = await runCli(['push', file], env())
    expect(result.code).to.equal(1)
    expect(result.stdout).to.equal('')
    expect(result.stderr).to.equal(
      `Error: ${file} holds a JSON array; push reads NDJSON, one lead object per line (hint: pull with --format ndjson, or convert it: jq -c '.[]' ${file})\n`,
    )
    expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
  })

  for (const format of ['csv', 'ndjson']) {
    it(`reads back what pull --format ${format} writes: pull, push into another customer, pull gives the same leads`, async function () {
      await daemon.services.customers.addField(tenant.customer.id, {slug: 'notes', type: 'string'})
      await daemon.services.customers.addField(tenant.customer.id, {slug: 'vip', type: 'boolean'})
      const leads = [
        {contact_name: 'Ada', contact_phone: '+1 555 010 2000', contact_email: 'ada@example.org', custom_fields: {budget: 250000, lead_line: 'buyer'}},
        {contact_name: '=SUM(A1:A2)', contact_email: 'formula@example.org', stage_slug: 'qualified', source_platform: 'referral', source_type: 'phone_call'},
        {contact_phone: '-44 20 7946 0000', custom_fields: {notes: 'says "hi", twice\nand more', vip: true, lead_line: 'seller'}},
      ]
      for (const lead of leads) expect((await postJson(daemon, tenant, '/api/agents/crm/leads', lead)).status).to.equal(201)
      const target = await newTenant(daemon.services, ['public_api:leads:write', 'public_api:leads:read'])
      for (const field of [
        {slug: 'budget', type: 'number'},
        {slug: 'notes', type: 'string'},
        {slug: 'vip', type: 'boolean'},
      ] as const) {
        await daemon.services.customers.addField(target.customer.id, field)
      }
      const targetEnv = {LEADS_BASE_URL: daemon.url, LEADS_API_TOKEN: target.token, LEADS_CUSTOMER_ID: target.customer.id}

      // One lead a page: the CSV's custom-field columns come from the first lead alone, so the
      // third lead's fields travel in the custom_fields JSON column.
      const pulled = await runCli(['pull', '--no-state', '--format', format, '--page-size', '1'], env())
      expect(pulled.code, pulled.stderr).to.equal(0)
      if (format === 'csv') {
        expect(pulled.stdout.split('\n')[0]).to.match(/,custom_fields\.budget:number,custom_fields\.lead_line,custom_fields$/)
        expect(pulled.stdout).to.include(',seller,"{""notes"":""says \\""hi\\"", twice\\nand more"",""vip"":true}"\n')
      }
      const file = write(`round-trip.${format}`, pulled.stdout)
      const pushed = await runCli(['push', file], targetEnv)
      expect(pushed.code, pushed.stdout + pushed.stderr).to.equal(0)
      expect(pushed.stdout.trim()).to.equal('3 rows: 3 created, 0 updated, 0 skipped, 0 failed')
      expect(pushed.stderr).to.match(/^note: ignored the fields the server sets: id, customer_id, .*created_at, updated_at/)

      const comparable = (text: string) =>
        text
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, any>)
          .map((lead) => ({
            contact_name: lead['contact_name'],
            contact_phone: lead['contact_phone'],
            contact_email: lead['contact_email'],
            source_platform: lead['source_platform'],
            source_type: lead['source_type'],
            stage: lead['current_stage'].slug,
            custom_fields: lead['custom_fields'],
          }))
          .sort((a, b) => String(a.contact_phone ?? a.contact_email).localeCompare(String(b.contact_phone ?? b.contact_email)))
      const before = comparable((await runCli(['pull', '--no-state'], env())).stdout)
      const after = comparable((await runCli(['pull', '--no-state'], targetEnv)).stdout)
      expect(after).to.deep.equal(before)
      expect(before.map((lead) => lead.contact_phone)).to.include('+1 555 010 2000')
      expect(before.find((lead) => lead.contact_email === 'formula@example.org')).to.include({contact_name: '=SUM(A1:A2)', stage: 'qualified'})
    })
  }

  it('reads custom_fields.<slug> columns and a custom_fields JSON column, the columns winning', async function () {
    const file = write('json-column.csv', 'contact_name,custom_fields.budget:number,custom_fields\nJo,5,"{""budget"":9,""lead_line"":""buyer""}"\n')
    const result = await runCliJson(['push', file], env())
    expect(result).to.deep.include({ignored_fields: [], failed: []})
    const pulled = JSON.parse((await runCli(['pull', '--no-state'], env())).stdout.trim())
    expect(pulled.custom_fields).to.deep.equal({budget: 5, lead_line: 'buyer'})
    const bad = await runCli(['push', write('bad-json.csv', 'contact_name,custom_fields\nJo,[1]\n'), '--json'], env())
    expect(bad.code).to.equal(1)
    expect(JSON.parse(bad.stdout).failed).to.deep.equal([{line: 2, message: 'custom_fields must be a JSON object, got "[1]"'}])
  })

  it('reads back a custom field pull --format csv writes as null or "" in a column of its own', async function () {
    // An empty cell means "not given" to push, so a null or "" there would be dropped: the copy
    // would keep an old value where the source cleared it.
    await daemon.services.customers.addField(tenant.customer.id, {slug: 'notes', type: 'string'})
    await daemon.services.customers.addField(tenant.customer.id, {slug: 'vip', type: 'boolean'})
    const sent = [
      {contact_email: 'set@example.org', custom_fields: {notes: 'x', vip: true, budget: 5}},
      {contact_email: 'cleared@example.org', custom_fields: {notes: '', vip: null, budget: null}},
    ]
    for (const lead of sent) expect((await postJson(daemon, tenant, '/api/agents/crm/leads', lead)).status).to.equal(201)
    const target = await newTenant(daemon.services, ['public_api:leads:write', 'public_api:leads:read'])
    for (const field of [
      {slug: 'budget', type: 'number'},
      {slug: 'notes', type: 'string'},
      {slug: 'vip', type: 'boolean'},
    ] as const) {
      await daemon.services.customers.addField(target.customer.id, field)
    }
    const targetEnv = {LEADS_BASE_URL: daemon.url, LEADS_API_TOKEN: target.token, LEADS_CUSTOMER_ID: target.customer.id}
    // The target's copy of the cleared lead still has the old values.
    expect(
      (await postJson(daemon, target, '/api/agents/crm/leads', {contact_email: 'cleared@example.org', custom_fields: {notes: 'old', vip: true, budget: 1}}))
        .status,
    ).to.equal(201)

    const pulled = await runCli(['pull', '--no-state', '--format', 'csv'], env())
    expect(pulled.stdout.split('\n')[0]).to.match(/,custom_fields\.budget:number,custom_fields\.notes,custom_fields\.vip:boolean,custom_fields$/)
    const pushed = await runCli(['push', write('cleared.csv', pulled.stdout)], targetEnv)
    expect(pushed.code, pushed.stdout + pushed.stderr).to.equal(0)
    const fields = async (environment: Record<string, string>) =>
      Object.fromEntries(
        (await runCli(['pull', '--no-state'], environment)).stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as {contact_email: string; custom_fields: unknown})
          .map((lead) => [lead.contact_email, lead.custom_fields]),
      )
    expect(await fields(targetEnv)).to.deep.equal(await fields(env()))
    expect((await fields(targetEnv))['cleared@example.org']).to.deep.equal({notes: '', vip: null, budget: null})
  })

  it('reads :boolean cells as spreadsheets write them (TRUE, False), and only true or false', async function () {
    await daemon.services.customers.addField(tenant.customer.id, {slug: 'vip', type: 'boolean'})
    const file = write('booleans.csv', 'contact_name,custom_fields.vip:boolean\nUpper,TRUE\nMixed,False\nLower,true\nWord,yes\n')
    const result = await runCli(['push', file, '--json'], env())
    expect(result.code).to.equal(1)
    expect(JSON.parse(result.stdout).failed).to.deep.equal([{line: 5, message: 'custom_fields.vip:boolean must be true or false (any case), got "yes"'}])
    const pulled = (await runCli(['pull', '--no-state'], env())).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {contact_name: string; custom_fields: {vip: boolean}})
    expect(pulled.map((lead) => [lead.contact_name, lead.custom_fields.vip])).to.deep.equal([
      ['Upper', true],
      ['Mixed', false],
      ['Lower', true],
    ])
    expect((await runCli(['push', '--help'], {})).stdout.replace(/\s+/g, ' ')).to.include(':boolean (true or false, any case)')
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

// MySQL only: there a retry whose key's first request is still in its transaction is refused with 409 at
// once; on SQLite (one writer) the retry waits for the first request instead.
for (const backend of backends().filter((each) => each.name === 'mysql')) {
  describe('leads push, a chunk whose answer was lost, on mysql', function () {
    let daemon: TestDaemon
    let tenant: TestTenant
    let dir: string

    before(async function () {
      daemon = await startTestDaemon(backend)
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-push-lost-'))
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, ['public_api:leads:write', 'public_api:leads:read'])
    })
    after(async function () {
      await daemon.stop()
      fs.rmSync(dir, {recursive: true, force: true})
    })

    it('retries the chunk with its key while the first request is still running, and reports its rows', async function () {
      const upstream = new URL(daemon.url)
      const held = holdNextCommit(daemon.db)
      let connections = 0
      let conflicts = 0
      const sockets = new Set<net.Socket>()
      // Between push and the daemon: the first connection is cut once its bulk request is in its
      // transaction (its answer is lost, as with a dropped connection); the first 409 the retry
      // gets lets that request commit.
      const proxy = net.createServer((client) => {
        const server = net.connect(Number(upstream.port), upstream.hostname)
        sockets.add(client).add(server)
        const first = ++connections === 1
        client.on('error', () => server.destroy())
        server.on('error', () => client.destroy())
        client.pipe(server)
        server.on('data', (chunk: Buffer) => {
          if (chunk.toString('latin1').startsWith('HTTP/1.1 409') && ++conflicts === 1) held.release()
          if (!client.destroyed) client.write(chunk)
        })
        server.on('end', () => client.end())
        if (first) void held.entered.then(() => client.destroy())
      })
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
      try {
        const file = path.join(dir, 'lost.csv')
        fs.writeFileSync(file, 'contact_name,contact_email\nLost One,lost1@example.org\nLost Two,lost2@example.org\n')
        const env = {
          LEADS_BASE_URL: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`,
          LEADS_API_TOKEN: tenant.token,
          LEADS_CUSTOMER_ID: tenant.customer.id,
        }
        const result = await runCli(['push', file], env)
        expect(conflicts, 'the retry met the running first request').to.be.greaterThan(0)
        expect(result.code, result.stderr).to.equal(0)
        expect(result.stdout.trim().split('\n').at(-1)).to.equal('2 rows: 2 created, 0 updated, 0 skipped, 0 failed')
        expect(await counts(daemon, tenant)).to.deep.equal({leads: 2, events: 0})
      } finally {
        held.release()
        for (const socket of sockets) socket.destroy()
        await new Promise((resolve) => proxy.close(resolve))
      }
    })
  })
}
