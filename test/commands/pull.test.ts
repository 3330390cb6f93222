import {spawn} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'
import {parse} from 'csv-parse/sync'

import {LeadsApiClient} from '../../src/client/api-client.js'
import {LeadWriter} from '../../src/client/lead-writer.js'
import {pullLeads} from '../../src/client/pull.js'
import {CursorCodec} from '../../src/leads/cursor.js'
import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {CLI, runCli, runCliAtTerminal} from '../helpers/cli.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {screenOf} from '../helpers/terminal-screen.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {freePort, waitUntil} from '../helpers/local-servers.js'

const LEADS = 250
const idsOf = (ndjson: string) =>
  ndjson
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as {id: string}).id)

describe('leads pull', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    let dir: string
    let stateFile: string
    let allIds: string[]
    /** The updated_at of the tenth lead from the end: --since it selects the last ten. */
    let lastTenSince: string
    const env = (token = tenant.token) => ({LEADS_BASE_URL: daemon.url, LEADS_API_TOKEN: token, LEADS_CUSTOMER_ID: tenant.customer.id})

    before(async function () {
      daemon = await startTestDaemon(backend, {limitsCacheTtlMs: 0})
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-pull-'))
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      const base = Date.now() - LEADS * 1000
      const leads = Array.from({length: LEADS}, (_, i) =>
        leadRecord(tenant, {contactName: `Pulled ${i}`, contactEmail: `pulled${i}@example.org`, createdAt: base + i * 1000, updatedAt: base + i * 1000}),
      )
      await insertLeads(daemon.db, leads)
      allIds = leads.map((lead) => lead.id)
      lastTenSince = new Date(base + (LEADS - 10) * 1000).toISOString()
      stateFile = path.join(dir, `${tenant.customer.id}.json`)
    })
    after(async function () {
      await daemon.stop()
      fs.rmSync(dir, {recursive: true, force: true})
    })

    it('writes every lead as NDJSON, saves its place, and next time writes only what changed', async function () {
      const first = await runCli(['pull', '--state', stateFile], env())
      expect(first.code, first.stderr).to.equal(0)
      expect(first.stderr).to.equal('')
      expect(idsOf(first.stdout)).to.deep.equal(allIds)
      const state = JSON.parse(fs.readFileSync(stateFile, 'utf8'))
      expect(state).to.include({version: 2, leads_pulled: LEADS, customer_id: tenant.customer.id})
      expect(state.cursor).to.be.a('string')

      const again = await runCli(['pull', '--state', stateFile], env())
      expect(again.stdout).to.equal('')
      expect(again.stderr).to.equal(`resuming from ${stateFile} at the saved position, ${LEADS} leads pulled so far; --reset starts over\n`)
      await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_email: 'pulled7@example.org', contact_name: 'Renamed'})
      const third = await runCli(['pull', '--state', stateFile], env())
      const changed = third.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as {id: string; contact_name: string})
      expect(changed).to.have.length(1)
      expect(changed[0]).to.include({id: allIds[7], contact_name: 'Renamed'})
    })

    it('refuses a state file of another customer rather than resuming at its position', async function () {
      expect((await runCli(['pull', '--state', stateFile], env())).code).to.equal(0)
      const other = await newTenant(daemon.services)
      const result = await runCli(['pull', '--state', stateFile], {
        LEADS_BASE_URL: daemon.url,
        LEADS_API_TOKEN: other.token,
        LEADS_CUSTOMER_ID: other.customer.id,
      })
      expect(result.code).to.equal(1)
      expect(result.stdout).to.equal('')
      expect(result.stderr).to.match(new RegExp(`^Error: state file .* belongs to customer ${tenant.customer.id} at .*\\(hint: give each customer`))
    })

    it('starts at --since on a first run', async function () {
      const result = await runCli(['pull', '--state', stateFile, '--since', lastTenSince], env())
      expect(idsOf(result.stdout)).to.deep.equal(allIds.slice(-10))
    })

    it('starts after the leads of a --since millisecond when --since has digits past it', async function () {
      const result = await runCli(['pull', '--no-state', '--since', lastTenSince.replace('Z', '9Z')], env())
      expect(result.code, result.stderr).to.equal(0)
      expect(idsOf(result.stdout)).to.deep.equal(allIds.slice(-9))
    })

    it('takes --since as a date, a time with an offset or a duration ago, as the other --since flags do', async function () {
      const [date] = new Date(Date.now() - LEADS * 1000).toISOString().split('T')
      const byDate = await runCli(['pull', '--no-state', '--since', date!], env())
      expect(byDate.code, byDate.stderr).to.equal(0)
      expect(idsOf(byDate.stdout)).to.deep.equal(allIds)
      const inBerlin = new Date(Date.parse(lastTenSince) + 3_600_000).toISOString().replace('Z', '+01:00')
      expect(idsOf((await runCli(['pull', '--no-state', '--since', inBerlin], env())).stdout)).to.deep.equal(allIds.slice(-10))
      expect(idsOf((await runCli(['pull', '--no-state', '--since', '1d'], env())).stdout)).to.deep.equal(allIds)
    })

    it('refuses a --since it cannot read before --reset forgets the saved position', async function () {
      expect((await runCli(['pull', '--state', stateFile], env())).code).to.equal(0)
      const saved = fs.readFileSync(stateFile, 'utf8')
      const result = await runCli(['pull', '--state', stateFile, '--reset', '--since', '2026-06-01 09:00'], env())
      expect(result.code).to.equal(1)
      expect(result.stderr).to.equal(
        'Error: since must be an ISO-8601 time like 2026-11-24T09:00:00Z, or a duration ago like 2h or 1d, got "2026-06-01 09:00"\n',
      )
      expect(fs.readFileSync(stateFile, 'utf8')).to.equal(saved)
    })

    it('shows every lead at a terminal: no progress redraw erases a line the pull wrote', async function () {
      const result = await runCliAtTerminal(['pull', '--no-state', '--page-size', '40', '--no-custom-fields'], env())
      expect(result.code, result.stdout).to.equal(0)
      const shown = screenOf(result.stdout)
        .filter((line) => line.startsWith('{'))
        .map((line) => (JSON.parse(line) as {id: string}).id)
      expect(shown).to.deep.equal(allIds)
    })

    it('resumes after being killed between pages, with no lead missing', async function () {
      // Three pages a minute: the run is parked on a 429 when it is killed.
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 3})
      const child = spawn(process.execPath, [CLI, 'pull', '--state', stateFile, '--page-size', '40'], {
        env: {...process.env, ...env()},
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let firstRun = ''
      let waits = ''
      child.stdout.on('data', (chunk: Buffer) => (firstRun += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (waits += chunk.toString()))
      await waitUntil(() => idsOf(firstRun).length >= 120 && waits.includes('rate limited; resuming in'), 'three pages, then the wait for the fourth')
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
      expect(idsOf(firstRun)).to.deep.equal(allIds.slice(0, 120))

      await daemon.services.rateLimits.clear({type: 'key', id: tenant.key.id})
      const second = await runCli(['pull', '--state', stateFile, '--page-size', '40'], env())
      expect(second.code).to.equal(0)
      const seen = new Set([...idsOf(firstRun), ...idsOf(second.stdout)])
      expect(seen.size).to.equal(LEADS)
      // Into a pipe, a position is saved only once a pipe's worth of later output was written: the
      // resumed run may repeat the last leads the killed one wrote, never skip one.
      expect(allIds.indexOf(idsOf(second.stdout)[0]!)).to.be.within(0, 120)
    })

    it('waits out a 429 for Retry-After and goes on', async function () {
      await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 1})
      const waits: number[] = []
      const client = new LeadsApiClient({
        baseUrl: daemon.url,
        token: tenant.token,
        customerId: tenant.customer.id,
        // Instead of waiting a minute, "time passes" by lifting the limit.
        sleep: async (ms) => {
          waits.push(ms)
          await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 1000})
        },
      })
      let output = ''
      const summary = await pullLeads(client, {
        baseUrl: daemon.url,
        customerId: tenant.customer.id,
        stateFile,
        pageSize: 100,
        includeCustomFields: true,
        follow: false,
        intervalMs: 0,
        writer: new LeadWriter('ndjson', async (text) => void (output += text)),
      })
      expect(waits).to.have.length(1)
      expect(waits[0]).to.be.within(1000, 60_000)
      expect(summary.leads).to.equal(LEADS)
      expect(idsOf(output)).to.deep.equal(allIds)
    })

    it('picks up a lead updated while it pages, writing it again with its new values', async function () {
      let output = ''
      const client = new LeadsApiClient({baseUrl: daemon.url, token: tenant.token, customerId: tenant.customer.id})
      let changed = false
      await pullLeads(client, {
        baseUrl: daemon.url,
        customerId: tenant.customer.id,
        stateFile,
        pageSize: 50,
        includeCustomFields: true,
        follow: false,
        intervalMs: 0,
        writer: new LeadWriter('ndjson', async (text) => void (output += text)),
        onProgress: async () => {
          if (changed) return
          changed = true
          await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_email: 'pulled3@example.org', contact_name: 'Changed mid-run'})
        },
      })
      const leads = output
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as {id: string; contact_name: string})
      expect(new Set(leads.map((lead) => lead.id)).size).to.equal(LEADS)
      const copies = leads.filter((lead) => lead.id === allIds[3])
      expect(copies.map((lead) => lead.contact_name)).to.deep.equal(['Pulled 3', 'Changed mid-run'])
    })

    it('writes one JSON array with --format json and CSV with a header with --format csv', async function () {
      const json = await runCli(['pull', '--state', stateFile, '--format', 'json'], env())
      expect((JSON.parse(json.stdout) as Array<{id: string}>).map((lead) => lead.id)).to.deep.equal(allIds)
      fs.rmSync(stateFile)
      const csv = await runCli(['pull', '--state', stateFile, '--format', 'csv'], env())
      const rows = parse(csv.stdout, {columns: true}) as Array<Record<string, string>>
      expect(rows).to.have.length(LEADS)
      expect(rows[0]).to.include({id: allIds[0], contact_name: 'Pulled 0', stage_slug: 'new', custom_fields: ''})
      // Nothing changed since: a CSV is a whole file per run, so its header alone (leads push reads it as no rows).
      const again = await runCli(['pull', '--state', stateFile, '--format', 'csv'], env())
      expect(again.code, again.stderr).to.equal(0)
      expect(again.stdout.trim().split('\n')).to.have.length(1)
      expect(again.stdout).to.match(/^id,customer_id,/)
    })

    it('keeps polling with --follow and exits 0 on SIGINT', async function () {
      const child = spawn(process.execPath, [CLI, 'pull', '--state', stateFile, '--follow', '--interval', '1s'], {
        env: {...process.env, ...env()},
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
      await waitUntil(() => idsOf(output).length >= LEADS, `the first ${LEADS} leads on stdout`)
      const created = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Arrived later'})
      await waitUntil(() => output.includes(created.body.lead.id), 'the lead created while following on stdout')
      expect(output).to.include(created.body.lead.id)
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill('SIGINT')
      expect(await exited).to.equal(0)
    })

    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      it(`stops at once on ${signal} while it waits out a 429, keeping the pages written`, async function () {
        // One page a minute: the second page waits for the next minute's window.
        await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 1})
        const child = spawn(process.execPath, [CLI, 'pull', '--state', stateFile, '--page-size', '100'], {
          env: {...process.env, ...env()},
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let output = ''
        let errors = ''
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
        child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()))
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
        await waitUntil(() => errors.includes('rate limited'), 'the pull to wait for the rate limit')
        const stoppedAt = Date.now()
        child.kill(signal)
        expect(await exited).to.equal(0)
        expect(Date.now() - stoppedAt).to.be.below(5000)
        expect(idsOf(output)).to.deep.equal(allIds.slice(0, 100))
        // The next run starts after the page the stopped one wrote.
        await daemon.services.rateLimits.set({type: 'key', id: tenant.key.id}, {perMinute: 1000})
        const next = await runCli(['pull', '--state', stateFile], env())
        expect(idsOf(next.stdout)).to.deep.equal(allIds.slice(100))
      })
    }

    it('loses nothing to a peek: `pull | head -2` ends quietly, and the next run still writes every lead', async function () {
      const peek = await new Promise<{code: number | null; stderr: string}>((resolve) => {
        const child = spawn('bash', ['-c', `"${process.execPath}" "${CLI}" pull --state "${stateFile}" | head -2 >/dev/null; echo "\${PIPESTATUS[0]}" >&2`], {
          env: {...process.env, ...env()},
        })
        let stderr = ''
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
        child.on('exit', (code) => resolve({code, stderr}))
      })
      expect(peek.stderr.trim()).to.equal('0')
      const full = await runCli(['pull', '--state', stateFile], env())
      expect(full.code).to.equal(0)
      expect(new Set(idsOf(full.stdout))).to.deep.equal(new Set(allIds))
    })

    it('says when --since is ignored, starts over with --reset, and keeps no position with --no-state', async function () {
      expect((await runCli(['pull', '--state', stateFile], env())).code).to.equal(0)
      const since = lastTenSince
      const ignored = await runCli(['pull', '--state', stateFile, '--since', since], env())
      expect(ignored.stdout).to.equal('')
      expect(ignored.stderr).to.include('warning: --since is ignored because the state file has a position; add --reset to start at --since')
      const reset = await runCli(['pull', '--state', stateFile, '--since', since, '--reset'], env())
      expect(idsOf(reset.stdout)).to.deep.equal(allIds.slice(-10))
      expect(reset.stderr).to.equal('')

      const noState = path.join(dir, 'never-written.json')
      for (let run = 0; run < 2; run++) {
        const once = await runCli(['pull', '--no-state', '--since', since], env())
        expect(idsOf(once.stdout)).to.deep.equal(allIds.slice(-10))
      }
      expect(fs.existsSync(noState)).to.equal(false)
    })

    it('includes custom fields by default and leaves them out with --no-custom-fields', async function () {
      await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
      await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_email: 'pulled0@example.org', custom_fields: {budget: 12, lead_line: 'buyer'}})
      const withFields = await runCli(['pull', '--no-state'], env())
      const updated = withFields.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as {id: string; custom_fields?: unknown})
        .filter((lead) => lead.id === allIds[0])
      expect(updated.at(-1)!.custom_fields).to.deep.equal({budget: 12, lead_line: 'buyer'})
      const without = await runCli(['pull', '--no-state', '--no-custom-fields'], env())
      expect(JSON.parse(without.stdout.split('\n')[0]!)).to.not.have.property('custom_fields')
      // CSV: the custom fields' columns when asked for, none at all (not an empty custom_fields column) when not.
      const headerOf = async (...flags: string[]) =>
        (await runCli(['pull', '--no-state', '--format', 'csv', ...flags], env())).stdout.split('\n')[0]!.split(',')
      expect((await headerOf()).at(-1)).to.equal('custom_fields')
      for (const format of ['csv', 'csv-excel']) {
        const header = (await runCli(['pull', '--no-state', '--format', format, '--no-custom-fields'], env())).stdout.split('\n')[0]!.split(',')
        expect(
          header.filter((column) => column.startsWith('custom_fields')),
          format,
        ).to.deep.equal([])
        expect(header.at(-1)).to.equal('interaction_count')
      }
    })

    it('neutralises formula-like CSV cells with --format csv-excel only, and says so in its help', async function () {
      await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: '=HYPERLINK("http://evil.example","x")', contact_phone: '+1 555 010 9999'})
      const rowOf = async (format: string) => {
        const csv = await runCli(['pull', '--no-state', '--format', format], env())
        const rows = parse(csv.stdout, {columns: true}) as Array<Record<string, string>>
        return rows.find((candidate) => candidate['contact_name']!.includes('HYPERLINK'))!
      }
      const guarded = await rowOf('csv-excel')
      expect(guarded['contact_name']).to.equal(`'=HYPERLINK("http://evil.example","x")`)
      expect(guarded['contact_phone']).to.equal(`'+1 555 010 9999`)
      const plain = await rowOf('csv')
      expect(plain['contact_name']).to.equal('=HYPERLINK("http://evil.example","x")')
      expect(plain['contact_phone']).to.equal('+1 555 010 9999')
      const help = (await runCli(['pull', '--help'], env())).stdout.replace(/\s+/g, ' ')
      expect(help).to.include('formula injection')
      expect(help).to.include('csv-excel')
    })

    it('converts a state file of the timestamp format and resumes at its time', async function () {
      const since = lastTenSince
      fs.writeFileSync(
        stateFile,
        JSON.stringify({base_url: daemon.url, customer_id: tenant.customer.id, cursor: null, updated_since: since, last_id: null, leads_pulled: 7}),
      )
      const result = await runCli(['pull', '--state', stateFile], env())
      expect(idsOf(result.stdout)).to.deep.equal(allIds.slice(-10))
      expect(result.stderr).to.include(`at updated_since ${since} (converted from an older state file), 7 leads pulled so far`)
      expect(JSON.parse(fs.readFileSync(stateFile, 'utf8'))).to.include({version: 2, leads_pulled: 17})
    })

    it('refuses a --state that is a directory in one line, with or without --reset', async function () {
      const directory = fs.mkdtempSync(path.join(dir, 'state-dir-'))
      for (const extra of [[], ['--reset']]) {
        const result = await runCli(['pull', '--state', directory, ...extra], env())
        expect(result.code, extra.join(' ')).to.equal(1)
        expect(result.stdout).to.equal('')
        expect(result.stderr).to.equal(
          `Error: state file ${directory} is a directory (hint: give --state the path of a file, such as ${path.join(directory, 'leads.state.json')})\n`,
        )
      }
      expect(fs.statSync(directory).isDirectory()).to.equal(true)
    })

    it('says to start over when the server no longer accepts the saved position, as after a change of its master key', async function () {
      const otherKey = new CursorCodec(randomBytes(32))
      const cursor = otherKey.encodeChange({seq: 3, id: allIds[2]!, updatedSince: null}, tenant.customer.id)
      const saved = {version: 2, base_url: daemon.url, customer_id: tenant.customer.id, cursor, leads_pulled: 3, saved_at: new Date().toISOString()}
      fs.writeFileSync(stateFile, JSON.stringify(saved))
      const result = await runCli(['pull', '--state', stateFile], env())
      expect(result.code).to.equal(1)
      expect(result.stdout).to.equal('')
      expect(result.stderr.trim().split('\n').at(-1)).to.equal(
        `Error: the position saved in ${stateFile} is not accepted by the server: cursor is not valid; pass next_cursor from an earlier response unchanged (hint: start over with --reset (add --since to start at a time))`,
      )
      const again = await runCli(['pull', '--state', stateFile, '--reset'], env())
      expect(idsOf(again.stdout)).to.deep.equal(allIds)
    })

    it('fails within seconds with a hint when the daemon cannot be reached', async function () {
      const closed = `http://127.0.0.1:${await freePort()}`
      const started = Date.now()
      const result = await runCli(['pull', '--no-state'], {...env(), LEADS_BASE_URL: closed})
      expect(Date.now() - started).to.be.below(5000)
      expect(result.code).to.equal(1)
      const lines = result.stderr.trim().split('\n')
      // Each wait is one line on a non-terminal stderr; the error is the last line.
      expect(lines.slice(0, -1)).to.have.length(2)
      for (const line of lines.slice(0, -1))
        expect(line).to.match(new RegExp(`^cannot reach ${closed.replace(/[.]/g, '\\.')}: ECONNREFUSED; retrying in \\ds$`))
      expect(lines.at(-1)).to.equal(
        `Error: cannot reach ${closed}: ECONNREFUSED (hint: is the daemon running at ${closed}? Start it with \`leads daemon\`, or set LEADS_BASE_URL)`,
      )
    })

    it('refuses --follow with --format json and --interval without --follow as usage errors, and a bad token with one line', async function () {
      const usage = await runCli(['pull', '--follow', '--format', 'json'], env())
      expect(usage.code).to.equal(2)
      const interval = await runCli(['pull', '--interval', '5s', '--state', stateFile], env())
      expect(interval.code).to.equal(2)
      expect(interval.stderr.trim().split('\n')).to.have.length(1)
      expect(interval.stderr).to.include('--interval only applies with --follow')
      expect(interval.stdout).to.equal('')
      const denied = await runCli(['pull', '--state', stateFile], env('svc_' + '0'.repeat(64)))
      expect(denied.code).to.equal(1)
      expect(denied.stderr).to.match(/^Error: Invalid, revoked or expired API token\. .*\(hint: check LEADS_API_TOKEN/)
      expect(denied.stdout).to.equal('')
    })
  })
})
