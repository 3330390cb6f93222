import {expect} from 'chai'

import {forEachBackend} from '../helpers/backends.js'
import {runCli} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

describe('leads status', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const env = () => ({...backend.env, LEADS_MASTER_KEY: 'ab'.repeat(32), LEADS_BASE_URL: daemon.url})

    before(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services, ['public_api:leads:read'])
    })
    after(async function () {
      await daemon.stop()
    })

    it('reports the database, master key, Redis and a ready daemon, and says the client is not configured', async function () {
      const result = await runCli(['status', '--json'], env())
      expect(result.code, result.stderr).to.equal(0)
      const report = JSON.parse(result.stdout)
      const byName = Object.fromEntries(report.checks.map((check: {check: string}) => [check.check, check]))
      expect(report.ok).to.equal(true)
      expect(byName.database.ok).to.equal(true)
      // The server the run points at (one MariaDB, or HAProxy in front of a cluster), its user left out.
      const server = backend.name === 'mysql' ? new URL(backend.env['LEADS_DATABASE_URL']!) : null
      expect(byName.database.summary).to.match(
        server
          ? new RegExp(`^mysql mysql://${server.host.replaceAll('.', '\\.')}${server.pathname}: reachable, \\d+ migrations applied, 0 pending$`)
          : /^sqlite .*: reachable, \d+ migrations applied, 0 pending$/,
      )
      expect(byName['master key']).to.include({ok: true, summary: 'from LEADS_MASTER_KEY'})
      expect(byName.redis.ok).to.equal(backend.name === 'mysql' ? true : null)
      expect(byName.daemon).to.include({ok: true, summary: `${daemon.url}: ready`})
      expect(byName.client.ok).to.equal(null)
      expect(byName.database.details).to.include({client: backend.name === 'mysql' ? 'mysql' : 'sqlite', reachable: true, migrations_pending: 0})
      expect(byName.database.details.migrations_applied).to.be.greaterThan(0)
      expect(byName['master key'].details).to.deep.equal({source: 'LEADS_MASTER_KEY'})
      expect(byName.redis.details).to.include(backend.name === 'mysql' ? {configured: true, reachable: true} : {configured: false})
      expect(byName.daemon.details).to.deep.equal({url: daemon.url, reachable: true, ready: true, reasons: []})
      expect(byName.client.details).to.deep.equal({configured: false})
    })

    it('--json gives the client check as fields: key, customer, scopes and rate-limit budget', async function () {
      const result = await runCli(['status', '--json'], {...env(), LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id})
      expect(result.code, result.stderr).to.equal(0)
      const client = JSON.parse(result.stdout).checks.find((check: {check: string}) => check.check === 'client')
      expect(client.details).to.deep.include({configured: true, base_url: daemon.url, customer_id: tenant.customer.id})
      expect(client.details.key).to.deep.equal({
        id: tenant.key.id,
        name: tenant.key.name,
        customer_id: tenant.customer.id,
        state: 'active',
        scopes: ['public_api:leads:read'],
        internal: false,
      })
      expect(client.details.api).to.deep.include({reachable: true, status: 200, accepts_token: true})
      expect(client.details.api.rate_limit).to.include({limit: 60})
      expect(result.stdout).to.not.include(tenant.token)
    })

    it('names the key, customer, scopes and rate-limit budget of the client token, never the token', async function () {
      const result = await runCli(['status'], {...env(), LEADS_API_TOKEN: tenant.token, LEADS_CUSTOMER_ID: tenant.customer.id})
      expect(result.code, result.stdout + result.stderr).to.equal(0)
      const client = result.stdout.split('\n').find((line) => line.includes('client'))!
      expect(client).to.match(/^✓ client/)
      expect(client).to.include(`customer ${tenant.customer.id}`)
      expect(client).to.include(`key ${tenant.key.id}, active, scopes public_api:leads:read`)
      expect(client).to.match(/rate limit \d+\/60 left \(resets in \d+ s\)/)
      expect(result.stdout).not.to.include(tenant.token)
    })

    it('fails with a hint for a token locked to another customer and for a daemon that is not there', async function () {
      const other = await newTenant(daemon.services)
      const result = await runCli(['status'], {
        ...env(),
        LEADS_BASE_URL: 'http://127.0.0.1:9',
        LEADS_API_TOKEN: tenant.token,
        LEADS_CUSTOMER_ID: other.customer.id,
      })
      expect(result.code).to.equal(1)
      expect(result.stdout).to.match(/✗ daemon +http:\/\/127\.0\.0\.1:9: not reachable/)
      expect(result.stdout).to.include(`locked to customer ${tenant.customer.id}`)
      expect(result.stdout).to.include('hint: is the daemon running?')
    })
  })
})
