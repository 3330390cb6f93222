import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {runCli, runCliJson} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

/** Client settings: flags beat the environment, which beats the profile kept by `leads config`. */
describe('client settings and profiles', function () {
  const backend = backends()[0]!
  let daemon: TestDaemon
  let tenant: TestTenant
  let configDir: string
  let leadId: string
  /** Only the CLI's config directory: no LEADS_BASE_URL, LEADS_API_TOKEN or LEADS_CUSTOMER_ID. */
  const bare = () => ({LEADS_CONFIG_DIR: configDir})
  const pulledIds = (stdout: string) =>
    stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as {id: string}).id)

  before(async function () {
    daemon = await startTestDaemon(backend)
    tenant = await newTenant(daemon.services)
    leadId = (await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Profiled'})).body.lead.id
  })
  beforeEach(function () {
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-config-'))
  })
  afterEach(function () {
    fs.rmSync(configDir, {recursive: true, force: true})
  })
  after(async function () {
    await daemon.stop()
  })

  it('keeps settings in a profile file only its owner can read, and shows a token only by its ends', async function () {
    for (const [name, value] of [
      ['base-url', daemon.url],
      ['token', tenant.token],
      ['customer', tenant.customer.id],
    ]) {
      const set = await runCli(['config', 'set', name!, value!], bare())
      expect(set.code, set.stderr).to.equal(0)
      expect(set.stdout).not.to.include(tenant.token)
    }
    const file = path.join(configDir, 'profiles.json')
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600)
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).to.deep.equal({default: {'base-url': daemon.url, token: tenant.token, customer: tenant.customer.id}})
    const token = await runCli(['config', 'get', 'token'], bare())
    expect(token.stdout).to.equal(`${tenant.token.slice(0, 4)}…${tenant.token.slice(-4)}\n`)
    const listed = await runCliJson(['config', 'list'], bare())
    expect(listed.profiles).to.deep.include({profile: 'default', name: 'token', value: `${tenant.token.slice(0, 4)}…${tenant.token.slice(-4)}`})
    expect(JSON.stringify(listed)).not.to.include(tenant.token)
    // pull runs on the profile alone.
    const pulled = await runCli(['pull', '--no-state'], bare())
    expect(pulled.code, pulled.stderr).to.equal(0)
    expect(pulledIds(pulled.stdout)).to.deep.equal([leadId])
  })

  it('lets the environment beat the profile and a flag beat both', async function () {
    await runCli(['config', 'set', 'base-url', 'http://127.0.0.1:9', '--profile', 'acme'], bare())
    await runCli(['config', 'set', 'token', tenant.token, '--profile', 'acme'], bare())
    await runCli(['config', 'set', 'customer', tenant.customer.id, '--profile', 'acme'], bare())
    const fromEnv = await runCli(['pull', '--no-state', '--profile', 'acme'], {...bare(), LEADS_BASE_URL: daemon.url})
    expect(fromEnv.code, fromEnv.stderr).to.equal(0)
    expect(pulledIds(fromEnv.stdout)).to.deep.equal([leadId])
    // Only the flag names the daemon: the environment and the profile name a port nothing listens on.
    const fromFlag = await runCli(['pull', '--no-state', '--profile', 'acme', '--base-url', daemon.url], {...bare(), LEADS_BASE_URL: 'http://127.0.0.1:9'})
    expect(fromFlag.code, fromFlag.stderr).to.equal(0)
    expect(pulledIds(fromFlag.stdout)).to.deep.equal([leadId])
    const flagsOnly = await runCli(['pull', '--no-state', '--base-url', daemon.url, '--token', tenant.token, '--customer', tenant.customer.id], bare())
    expect(pulledIds(flagsOnly.stdout)).to.deep.equal([leadId])
  })

  it('says in one line how to give a missing setting, and refuses a bad value or an unknown profile', async function () {
    const missing = await runCli(['pull', '--no-state'], bare())
    expect(missing.code).to.equal(1)
    expect(missing.stderr).to.equal(
      'Error: no API base URL given (http://127.0.0.1:8080) (hint: pass --base-url, set LEADS_BASE_URL, or keep it in a profile: leads config set base-url …)\n',
    )
    const badCustomer = await runCli(['config', 'set', 'customer', 'acme'], bare())
    expect(badCustomer.code).to.equal(1)
    expect(badCustomer.stderr).to.include('customer must be a UUID, got "acme"')
    expect(fs.existsSync(path.join(configDir, 'profiles.json'))).to.equal(false)
    const unknown = await runCli(['pull', '--no-state', '--profile', 'nope'], bare())
    expect(unknown.stderr).to.include('no profile "nope"')
  })
})
