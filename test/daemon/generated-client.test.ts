import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {backends} from '../helpers/backends.js'
import {PROJECT_ROOT} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

/** openapi-typescript lives apart (tools/openapi-client): it needs the TypeScript 5 API, which TypeScript 7 does not have. */
const GENERATOR_DIR = path.join(PROJECT_ROOT, 'tools/openapi-client')
const GENERATOR = path.join(GENERATOR_DIR, 'node_modules/.bin/openapi-typescript')
const TSC = path.join(PROJECT_ROOT, 'node_modules/.bin/tsc')

function run(command: string, args: string[], cwd: string): Promise<{code: number; stdout: string; output: string}> {
  return new Promise((resolve) =>
    execFile(command, args, {cwd, maxBuffer: 16 * 1024 * 1024}, (error, stdout, stderr) =>
      resolve({code: error ? Number(error.code ?? 1) : 0, stdout, output: stdout + stderr}),
    ),
  )
}

/**
 * A client program as an integrator writes it from the spec's examples with openapi-fetch and
 * the types generated from the document: every call the spec shows, with no more fields than
 * it shows. It prints what it saw as JSON; a failed expectation exits 1.
 */
const CLIENT_PROGRAM = `
import createClient from 'openapi-fetch'

import type {components, paths} from './schema.js'

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error('unexpected: ' + what)
}

const [baseUrl = '', token = '', customerId = ''] = process.argv.slice(2)
const client = createClient<paths>({baseUrl, headers: {authorization: 'Bearer ' + token, 'x-customer-id': customerId}})
const seen: Record<string, unknown> = {}

// Create with an Idempotency-Key, then replay it.
const input: components['schemas']['LeadInput'] = {contact_name: 'Ada Lovelace', contact_email: 'ada@example.org'}
const first = await client.POST('/api/agents/crm/leads', {params: {header: {'Idempotency-Key': 'create-ada-1'}}, body: input})
check(first.response.status === 201 && first.data !== undefined, 'create: ' + first.response.status)
const customFields: Record<string, string | number | boolean | null> = first.data.lead.custom_fields
const again = await client.POST('/api/agents/crm/leads', {params: {header: {'Idempotency-Key': 'create-ada-1'}}, body: input})
check(again.data !== undefined, 'replay')
seen.create = {
  id: first.data.lead.id,
  merged: first.data.merged,
  custom_fields: customFields,
  replayed: again.response.headers.get('Idempotent-Replayed'),
  replayedId: again.data.lead.id,
  remaining: Number(first.response.headers.get('RateLimit-Remaining')),
}

// A refused create: the error is typed as the envelope.
const refused = await client.POST('/api/agents/crm/leads', {body: {contact_name: ' '}})
check(refused.error !== undefined, 'refused create')
seen.refused = {status: refused.response.status, type: refused.error.error.type, param: refused.error.error.param ?? null}

// Bulk without dry_run or on_duplicate.
const bulk = await client.POST('/api/agents/crm/leads/bulk', {body: {leads: [{contact_name: 'Grace Hopper'}, {contact_phone: '+1 (555) 010-2000'}]}})
check(bulk.data !== undefined, 'bulk: ' + bulk.response.status)
seen.bulk = {dry_run: bulk.data.dry_run, summary: bulk.data.summary}

// Incremental polling: sort_by=updated_at&sort_dir=asc, following next_cursor.
const names: Array<string | null> = []
let cursor: string | undefined
for (let page = 0; page < 10; page++) {
  const listed = await client.GET('/api/agents/crm/leads', {
    params: {query: {sort_by: 'updated_at', sort_dir: 'asc', limit: 1, include_custom_fields: true, ...(cursor === undefined ? {} : {cursor})}},
  })
  check(listed.data !== undefined, 'list: ' + listed.response.status)
  names.push(...listed.data.leads.map((lead) => lead.contact_name))
  if (listed.data.next_cursor === null) break
  cursor = listed.data.next_cursor
}
seen.list = names

// Webhooks: register with url and event_types only, list, update, rotate, recover, delete.
const created = await client.POST('/api/agents/crm/lead-webhooks', {body: {url: 'https://hooks.example.com/leads', event_types: ['lead.created']}})
check(created.data !== undefined, 'webhook create: ' + created.response.status)
const webhook: components['schemas']['Webhook'] = created.data.webhook
const id = webhook.id
const listedHooks = await client.GET('/api/agents/crm/lead-webhooks')
check(listedHooks.data !== undefined, 'webhook list')
const updated = await client.PATCH('/api/agents/crm/lead-webhooks/{id}', {params: {path: {id}}, body: {description: 'CRM sync', timeout_seconds: 5}})
check(updated.data !== undefined, 'webhook update')
const rotated = await client.PATCH('/api/agents/crm/lead-webhooks/{id}', {params: {path: {id}}, body: {rotate_secret: true}})
check(rotated.data !== undefined && rotated.data.secret !== undefined, 'webhook rotate')
const recovered = await client.POST('/api/agents/crm/lead-webhooks/{id}/recover', {params: {path: {id}}, body: {since: new Date(Date.now() - 3_600_000).toISOString()}})
check(recovered.data !== undefined, 'webhook recover: ' + recovered.response.status)
const deleted = await client.DELETE('/api/agents/crm/lead-webhooks/{id}', {params: {path: {id}}})
check(deleted.data !== undefined, 'webhook delete')
seen.webhooks = {
  defaults: {timeout_seconds: webhook.timeout_seconds, retry_attempts: webhook.retry_attempts, description: webhook.description, is_active: webhook.is_active},
  secret: /^svc_whsec_[0-9a-f]{64}$/.test(created.data.secret),
  listed: listedHooks.data.webhooks.map((hook) => hook.id),
  updated: {description: updated.data.webhook.description, timeout_seconds: updated.data.webhook.timeout_seconds},
  rotated: rotated.data.secret !== created.data.secret,
  recovered: recovered.data.queued,
  deleted: deleted.data,
}

console.log(JSON.stringify(seen))
`

/**
 * A TypeScript client generated with openapi-typescript (default options) from the daemon's own
 * /openapi.json, and an openapi-fetch program written from the spec's examples, compiled with
 * `tsc --strict` and run against a real daemon on SQLite. A document that promises something the
 * examples do not do (a required field they leave out, a response field typed wrong) fails to compile.
 */
describe('a client generated from /openapi.json', function () {
  this.timeout(240_000)
  let daemon: TestDaemon
  let tenant: TestTenant
  let workDir: string

  /**
   * Generates schema.ts from `source` (a URL or a file) and compiles the client program with it.
   * The types go in a .ts file, so they are checked with the program, and the declarations of
   * the installed packages are not (--skipLibCheck, as `tsc --init` sets it): checking @types/node
   * took most of the compiler's time.
   */
  async function generateAndCompile(source: string): Promise<{code: number; output: string}> {
    const generated = await run(GENERATOR, [source, '-o', 'schema.ts'], workDir)
    expect(generated.code, generated.output).to.equal(0)
    const strict = [
      '--strict',
      '--skipLibCheck',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2023',
      '--types',
      'node',
      '--noEmitOnError',
    ]
    return run(TSC, [...strict, '--outDir', 'out', 'client.ts'], workDir)
  }

  before(async function () {
    // `npm install` installed it; a checkout installed before tools/openapi-client was added gets it now.
    if (!fs.existsSync(GENERATOR)) {
      const installed = await run(process.execPath, [path.join(PROJECT_ROOT, 'scripts/install-tools.js'), 'openapi-client'], PROJECT_ROOT)
      expect(installed.code, installed.output).to.equal(0)
    }
    daemon = await startTestDaemon(backends()[0]!, {lookup: async () => [{address: '93.184.216.34', family: 4 as const}]})
    tenant = await newTenant(daemon.services, undefined, {roomy: true})
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-client-'))
    // openapi-fetch and @types/node from the project, as an integrator's install would have them.
    fs.symlinkSync(path.join(PROJECT_ROOT, 'node_modules'), path.join(workDir, 'node_modules'), 'dir')
    fs.writeFileSync(path.join(workDir, 'package.json'), JSON.stringify({type: 'module', private: true}))
    fs.writeFileSync(path.join(workDir, 'client.ts'), CLIENT_PROGRAM)
  })
  after(async function () {
    await daemon?.stop()
    if (workDir) fs.rmSync(workDir, {recursive: true, force: true})
  })

  it('compiles the spec examples under --strict and runs them against the daemon', async function () {
    const compiled = await generateAndCompile(`${daemon.url}/openapi.json`)
    expect(compiled.code, compiled.output).to.equal(0)

    const ran = await run(process.execPath, ['out/client.js', daemon.url, tenant.token, tenant.customer.id], workDir)
    expect(ran.code, ran.output).to.equal(0)
    const seen = JSON.parse(ran.stdout)
    expect(seen.create).to.deep.include({merged: false, custom_fields: {}, replayed: 'true', replayedId: seen.create.id})
    expect(seen.create.remaining).to.be.a('number').and.above(0)
    expect(seen.refused).to.deep.equal({status: 400, type: 'invalid_request_error', param: 'contact_name'})
    expect(seen.bulk).to.deep.equal({dry_run: false, summary: {received: 2, created: 2, updated: 0, skipped: 0, failed: 0}})
    expect(seen.list).to.deep.equal(['Ada Lovelace', 'Grace Hopper', null])
    expect(seen.webhooks).to.deep.equal({
      defaults: {timeout_seconds: 10, retry_attempts: 5, description: null, is_active: true},
      secret: true,
      listed: [seen.webhooks.deleted.id],
      updated: {description: 'CRM sync', timeout_seconds: 5},
      rotated: true,
      recovered: 0,
      deleted: {id: seen.webhooks.deleted.id, deleted: true},
    })
  })

  it('fails to compile when the document makes a defaulted field required', async function () {
    // The drift this guards against: the bulk body under components/schemas, where openapi-typescript
    // turns `dry_run` and `on_duplicate` (which have defaults) into required properties.
    const document = (await daemon.request('/openapi.json')).body
    const bulkBody = document.components.requestBodies.BulkRequest
    document.components.schemas.BulkRequest = bulkBody.content['application/json'].schema
    bulkBody.content['application/json'].schema = {$ref: '#/components/schemas/BulkRequest'}
    fs.writeFileSync(path.join(workDir, 'drifted.json'), JSON.stringify(document))

    const compiled = await generateAndCompile('drifted.json')
    expect(compiled.code).to.not.equal(0)
    expect(compiled.output).to.match(/client\.ts.*error TS\d+/)
    expect(compiled.output).to.include('dry_run')
  })
})
