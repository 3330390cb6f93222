import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {backends} from '../helpers/backends.js'
import {runCli, runCliJson, runCliProcess, startCliAtTerminal} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
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
      'Error: no API base URL given (such as http://127.0.0.1:8080) (hint: pass --base-url, set LEADS_BASE_URL, or keep it in a profile: leads config set base-url …)\n',
    )
    const badCustomer = await runCli(['config', 'set', 'customer', 'acme'], bare())
    expect(badCustomer.code).to.equal(1)
    expect(badCustomer.stderr).to.include('customer must be a UUID, got "acme"')
    expect(fs.existsSync(path.join(configDir, 'profiles.json'))).to.equal(false)
    const unknown = await runCli(['pull', '--no-state', '--profile', 'nope'], bare())
    expect(unknown.stderr).to.include('no profile "nope"')
  })

  it('refuses a base URL holding a user or password, in a flag, the environment or a profile, without printing it', async function () {
    const withPassword = `http://user:s3cret@127.0.0.1:${new URL(daemon.url).port}`
    const env = {...bare(), LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id}
    const runs = [
      await runCli(['config', 'set', 'base-url', withPassword], bare()),
      await runCli(['pull', '--no-state', '--base-url', withPassword], env),
      await runCli(['api', 'GET', '/api/agents/crm/leads', '--base-url', withPassword], env),
      await runCli(['pull', '--no-state'], {...env, LEADS_BASE_URL: withPassword}),
    ]
    for (const run of runs) {
      expect(run.code, run.stderr).to.equal(1)
      expect(run.stderr.trim().split('\n')).to.have.length(1)
      expect(run.stderr).to.match(/must not hold a user or password \(the API token authenticates\)/)
      expect(run.stdout + run.stderr).to.not.include('s3cret')
    }
  })

  it('refuses a base URL whose scheme was forgotten (user:password@host) without printing the password', async function () {
    const noScheme = `user:s3cret@127.0.0.1:${new URL(daemon.url).port}`
    const env = {...bare(), LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id}
    const runs = [
      await runCli(['config', 'set', 'base-url', noScheme], bare()),
      await runCli(['pull', '--no-state', '--base-url', noScheme], env),
      await runCli(['api', 'GET', '/api/agents/crm/leads', '--base-url', noScheme], env),
      await runCli(['pull', '--no-state'], {...env, LEADS_BASE_URL: noScheme}),
    ]
    for (const run of runs) {
      expect(run.code, run.stderr).to.equal(1)
      expect(run.stderr.trim().split('\n')).to.have.length(1)
      expect(run.stderr).to.match(/must be an http\(s\) URL, got "127\.0\.0\.1:\d+"/)
      expect(run.stdout + run.stderr).to.not.include('s3cret')
    }
  })

  it('names where an unreachable base URL came from in the hint: the flag, the environment or the profile', async function () {
    const closed = 'http://127.0.0.1:9'
    const reach = `is the daemon running at ${closed}? Start it with \`leads daemon\``
    const env = {...bare(), LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id}
    const fromFlag = await runCli(['pull', '--no-state', '--base-url', closed], env)
    expect(fromFlag.stderr.trim().split('\n').at(-1)).to.include(`(hint: ${reach}, or correct --base-url)`)
    const fromEnv = await runCli(['pull', '--no-state'], {...env, LEADS_BASE_URL: closed})
    expect(fromEnv.stderr.trim().split('\n').at(-1)).to.include(`(hint: ${reach}, or set LEADS_BASE_URL)`)
    await runCli(['config', 'set', 'base-url', closed, '--profile', 'acme'], bare())
    const fromProfile = await runCli(['pull', '--no-state', '--profile', 'acme'], env)
    expect(fromProfile.code).to.equal(1)
    expect(fromProfile.stderr.trim().split('\n').at(-1)).to.include(`(hint: ${reach}, or correct profile acme: leads config set base-url … --profile acme)`)
  })

  it('picks the profile by --profile, else LEADS_PROFILE, else the one `config use` chose, else default', async function () {
    for (const profile of ['acme', 'other']) {
      await runCli(['config', 'set', 'base-url', profile === 'acme' ? daemon.url : 'http://127.0.0.1:9', '--profile', profile], bare())
      await runCli(['config', 'set', 'token', tenant.token, '--profile', profile], bare())
      await runCli(['config', 'set', 'customer', tenant.customer.id, '--profile', profile], bare())
    }
    const none = await runCli(['pull', '--no-state'], bare())
    expect(none.stderr).to.include('no API base URL given')
    expect((await runCli(['config', 'use', 'acme'], bare())).stdout).to.equal('Now using profile acme (--profile and LEADS_PROFILE still win).\n')
    expect(pulledIds((await runCli(['pull', '--no-state'], bare())).stdout)).to.deep.equal([leadId])
    expect((await runCliJson(['config', 'list'], bare())).current).to.equal('acme')
    // LEADS_PROFILE beats the current profile, and --profile beats both: `other` names a port nothing listens on.
    const fromEnv = await runCli(['pull', '--no-state'], {...bare(), LEADS_PROFILE: 'other'})
    expect(fromEnv.code).to.equal(1)
    expect(pulledIds((await runCli(['pull', '--no-state', '--profile', 'acme'], {...bare(), LEADS_PROFILE: 'other'})).stdout)).to.deep.equal([leadId])
    expect((await runCli(['config', 'get', 'base-url'], {...bare(), LEADS_PROFILE: 'other'})).stdout).to.equal('http://127.0.0.1:9\n')
    expect((await runCli(['config', 'use', 'nope'], bare())).stderr).to.include('no profile "nope"')
    await runCli(['config', 'use', 'default'], bare())
    expect((await runCliJson(['config', 'list'], bare())).current).to.equal('default')
  })

  it('config unset removes a setting, and says so when it was not set', async function () {
    await runCli(['config', 'set', 'customer', tenant.customer.id], bare())
    const removed = await runCli(['config', 'unset', 'customer'], bare())
    expect(removed.code, removed.stderr).to.equal(0)
    expect(JSON.parse(fs.readFileSync(path.join(configDir, 'profiles.json'), 'utf8'))).to.deep.equal({default: {}})
    const again = await runCli(['config', 'unset', 'customer'], bare())
    expect(again.code).to.equal(1)
    expect(again.stderr).to.equal('Error: customer is not set in profile default (hint: `leads config list` shows what is set)\n')
  })

  it('config get and unset of a setting not set answer --json with a not_found_error envelope, as every 404 is', async function () {
    for (const [verb, hint] of [
      ['get', 'set it with `leads config set customer …`'],
      ['unset', '`leads config list` shows what is set'],
    ] as const) {
      const missing = await runCli(['config', verb, 'customer', '--json'], bare())
      expect(missing.code, verb).to.equal(1)
      expect(missing.stdout, verb).to.equal('')
      expect(JSON.parse(missing.stderr), verb).to.deep.equal({
        error: {type: 'not_found_error', code: 404, message: 'customer is not set in profile default', hint},
        exit_code: 1,
      })
    }
  })

  it('reads a token from stdin with -, or asks for it at a terminal without showing it, so it is never an argument', async function () {
    const piped = await runCliProcess(['config', 'set', 'token', '-', '--profile', 'piped'], bare(), undefined, `${tenant.token}\n`)
    expect(piped.code, piped.stderr).to.equal(0)
    expect(piped.stdout).to.not.include(tenant.token)
    const noValue = await runCliProcess(['config', 'set', 'token'], bare(), undefined, '')
    expect(noValue.code).to.equal(1)
    expect(noValue.stderr).to.include('no value given for token')

    const terminal = startCliAtTerminal(['config', 'set', 'token', '--profile', 'typed'], bare())
    await waitUntil(() => terminal.shown().includes('API token (not shown): '), 'the token prompt', 20_000)
    terminal.type(`${tenant.token}\r`, {last: true})
    const typed = await terminal.exited
    expect(typed.code, typed.stdout).to.equal(0)
    expect(typed.stdout).to.include('Set token = svc_')
    expect(typed.stdout).to.not.include(tenant.token)
    const profiles = JSON.parse(fs.readFileSync(path.join(configDir, 'profiles.json'), 'utf8'))
    expect(profiles).to.deep.equal({piped: {token: tenant.token}, typed: {token: tenant.token}})
  })
})
