import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../src/config/config.js'
import {createLogger} from '../../src/log/logger.js'
import {createServices} from '../../src/services.js'
import {runCli, runCliProcess} from '../helpers/cli.js'

/**
 * Operator commands use the database the daemon uses and never create one: on the embedded
 * default they look for .leads/leads.db from the working directory upwards.
 */
describe('the database operator commands use', function () {
  let top: string

  beforeEach(function () {
    top = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-location-'))
  })
  afterEach(function () {
    fs.rmSync(top, {recursive: true, force: true})
  })

  /** What the daemon leaves in its working directory on first start: the database and the master key. */
  async function startedDaemonIn(directory: string): Promise<string> {
    const services = await createServices(loadConfig({}, directory), {logger: createLogger('silent')})
    try {
      return (await services.customers.create({name: 'Made by the daemon'})).id
    } finally {
      await services.close()
    }
  }

  it('fails in one line saying where it looked, and creates nothing, when there is no database', async function () {
    // The real executable, end to end.
    const result = await runCliProcess(['customers', 'list'], {}, top)
    expect(result.code).to.equal(1)
    expect(result.stdout).to.equal('')
    expect(result.stderr.trim().split('\n')).to.have.length(1)
    expect(result.stderr).to.include(`no leads database found: looked for .leads/leads.db in ${top} and every directory above it`)
    expect(result.stderr).to.include('LEADS_DATABASE_URL')
    expect(fs.readdirSync(top)).to.deep.equal([])
  })

  it('finds the database the daemon made from a subdirectory, with its master key', async function () {
    const customerId = await startedDaemonIn(top)
    const deeper = path.join(top, 'src', 'leads')
    fs.mkdirSync(deeper, {recursive: true})
    const listed = await runCli(['customers', 'list', '--json'], {}, deeper)
    expect(listed.code, listed.stderr).to.equal(0)
    expect(JSON.parse(listed.stdout).customers.map((customer: {id: string}) => customer.id)).to.deep.equal([customerId])
    // A key minted from the subdirectory lands in the daemon's database, not in a new one.
    const issued = await runCli(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--json'], {}, deeper)
    expect(issued.code, issued.stderr).to.equal(0)
    expect(fs.existsSync(path.join(deeper, '.leads'))).to.equal(false)
    const keys = await runCli(['keys', 'list', '--json'], {}, top)
    expect(JSON.parse(keys.stdout).keys.map((key: {id: string}) => key.id)).to.deep.equal([JSON.parse(issued.stdout).id])
  })

  it('refuses a SQLite file named in LEADS_DATABASE_URL that does not exist, without creating it', async function () {
    const missing = path.join(top, 'elsewhere', 'leads.db')
    const result = await runCli(['keys', 'list'], {LEADS_DATABASE_URL: `sqlite://${missing}`}, top)
    expect(result.code).to.equal(1)
    expect(result.stderr).to.include(`no database at ${missing} (LEADS_DATABASE_URL)`)
    expect(fs.existsSync(path.dirname(missing))).to.equal(false)
  })

  it('refuses to run with a master key of its own when the one beside the database is gone', async function () {
    await startedDaemonIn(top)
    fs.rmSync(path.join(top, '.leads', 'master.key'))
    const result = await runCli(['customers', 'list'], {}, top)
    expect(result.code).to.equal(1)
    expect(result.stderr).to.include(`no master key at ${path.join(top, '.leads', 'master.key')}`)
    expect(fs.existsSync(path.join(top, '.leads', 'master.key'))).to.equal(false)
  })

  it('lets migrate create the database, and migrate the one above when there is one', async function () {
    const result = await runCli(['migrate', '--json'], {}, top)
    expect(result.code, result.stderr).to.equal(0)
    expect(fs.existsSync(path.join(top, '.leads', 'leads.db'))).to.equal(true)
    const deeper = path.join(top, 'docs')
    fs.mkdirSync(deeper)
    const again = await runCli(['migrate', '--json'], {}, deeper)
    expect(JSON.parse(again.stdout)).to.deep.equal({applied: []})
    expect(fs.existsSync(path.join(deeper, '.leads'))).to.equal(false)
  })
})
