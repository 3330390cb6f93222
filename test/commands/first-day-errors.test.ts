import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'
import mysql from 'mysql2/promise'

import {backends, describeInMysqlRun} from '../helpers/backends.js'
import {runCli, runCliJson, runCliProcess} from '../helpers/cli.js'

const MASTER_KEY = 'ab'.repeat(32)

/** The errors a new operator meets first: each one line saying what happened and what to do. */
describe('first-day errors', function () {
  let dir: string

  before(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-first-day-'))
  })
  after(function () {
    fs.rmSync(dir, {recursive: true, force: true})
  })

  it('a port in use names the port and how to choose another, and the daemon exits', async function () {
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const port = (holder.address() as net.AddressInfo).port
    try {
      const result = await runCliProcess(['daemon'], {
        LEADS_PORT: String(port),
        LEADS_DATABASE_URL: `sqlite://${path.join(dir, 'port.db')}`,
        LEADS_MASTER_KEY: MASTER_KEY,
        LEADS_LOG_LEVEL: 'silent',
      })
      expect(result.code).to.equal(1)
      expect(result.stderr).to.equal(
        `Error: LEADS_PORT ${port} on 127.0.0.1 is in use by another program (a leads daemon already running?) (hint: stop it, or choose another port: LEADS_PORT=${port + 1} npm start (or leads daemon))\n`,
      )
    } finally {
      holder.close()
    }
  })

  for (const [host, reason] of [
    ['192.0.2.1', 'is not an address of this machine'],
    ['no-such-host.invalid', 'does not resolve to an address'],
  ] as const) {
    it(`a listen address that ${reason} names LEADS_HOST, and the daemon exits`, async function () {
      const result = await runCliProcess(['daemon'], {
        LEADS_HOST: host,
        LEADS_PORT: '0',
        LEADS_DATABASE_URL: `sqlite://${path.join(dir, 'host.db')}`,
        LEADS_MASTER_KEY: MASTER_KEY,
        LEADS_LOG_LEVEL: 'silent',
      })
      expect(result.code).to.equal(1)
      expect(result.stderr).to.equal(
        `Error: LEADS_HOST ${host} ${reason} (hint: use one of its addresses: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface))\n`,
      )
    })
  }

  it('a MySQL server that does not answer is named by host and port', async function () {
    const result = await runCli(['customers', 'list'], {LEADS_DATABASE_URL: 'mysql://root@127.0.0.1:1/leads', LEADS_MASTER_KEY: MASTER_KEY})
    expect(result.code).to.equal(1)
    expect(result.stderr).to.equal(
      'Error: LEADS_DATABASE_URL cannot be reached: nothing listens on 127.0.0.1:1 (hint: start MariaDB or MySQL there, or fix the host and port in the URL)\n',
    )
  })

  it('a Redis that does not answer is named with what to check, as a database that does not answer is', async function () {
    const result = await runCli(['deliveries', 'list', '--webhook', 'wh_000000000000000000000000'], {
      ...backends()[0]!.env,
      LEADS_REDIS_URL: 'redis://:hunter2@127.0.0.1:1/0',
      LEADS_MASTER_KEY: MASTER_KEY,
    })
    expect(result.code).to.equal(1)
    expect(result.stderr).to.equal(
      'Error: LEADS_REDIS_URL cannot be reached: connect ECONNREFUSED 127.0.0.1:1 (hint: is Redis running there? Start it, or fix the host and port in LEADS_REDIS_URL)\n',
    )
    expect(result.stderr).not.to.include('hunter2')
  })

  it('leads migrate --status where there is no database yet lists every migration as pending and creates nothing', async function () {
    const empty = fs.mkdtempSync(path.join(dir, 'no-store-'))
    const result = await runCli(['migrate', '--status'], {}, empty)
    expect(result.code, result.stderr).to.equal(0)
    const rows = result.stdout.trim().split('\n')
    expect(rows.length).to.be.greaterThan(10)
    for (const row of rows) expect(row).to.match(/^\d{14}_[a-z0-9_]+\tpending$/)
    expect(result.stderr).to.equal(
      `no database at ${path.join(fs.realpathSync(empty), '.leads', 'leads.db')} yet: \`leads migrate\` or the daemon creates it\n`,
    )
    expect(fs.readdirSync(empty)).to.deep.equal([])
  })

  it('leads migrate, the first command on MySQL, names a server that does not answer the same way', async function () {
    for (const args of [['migrate'], ['migrate', '--status']]) {
      const result = await runCli(args, {LEADS_DATABASE_URL: 'mysql://root:s3cret@127.0.0.1:1/leads', LEADS_MASTER_KEY: MASTER_KEY})
      expect(result.code, args.join(' ')).to.equal(1)
      expect(result.stderr, args.join(' ')).to.equal(
        'Error: LEADS_DATABASE_URL cannot be reached: nothing listens on 127.0.0.1:1 (hint: start MariaDB or MySQL there, or fix the host and port in the URL)\n',
      )
    }
  })

  it('a token or signing secret pasted where an id goes is not printed back, in the line or in the --json envelope', async function () {
    const token = `svc_${'0123456789abcdef'.repeat(4)}`
    const secret = `svc_whsec_${'fedcba9876543210'.repeat(4)}`
    for (const pasted of [token, secret]) {
      for (const json of [false, true]) {
        const result = await runCli(['config', 'set', 'customer', pasted, ...(json ? ['--json'] : [])], {})
        expect(result.code).to.equal(1)
        expect(result.stderr).to.not.include(pasted.slice(-20))
        expect(result.stderr).to.include(`${pasted.startsWith('svc_whsec_') ? 'svc_whsec_' : 'svc_'}…${pasted.slice(-4)}`)
      }
    }
  })

  it('an NDJSON file read as CSV, or a CSV read as NDJSON, says which it is and how to pass --format', async function () {
    const ndjson = path.join(dir, 'leads.csv')
    fs.writeFileSync(ndjson, '{"contact_name":"Ada","contact_email":"ada@example.org"}\n')
    const asCsv = await runCli(['push', ndjson, '--dry-run'], {})
    expect(asCsv.code).to.equal(1)
    expect(asCsv.stderr).to.equal(
      `Error: ${ndjson} holds JSON (NDJSON: one lead object per line), not CSV (hint: pass --format ndjson, or name the file .ndjson)\n`,
    )
    expect((await runCli(['push', ndjson, '--dry-run', '--format', 'ndjson'], {})).code).to.equal(0)

    const csv = path.join(dir, 'leads.ndjson')
    fs.writeFileSync(csv, 'contact_name,contact_email\nAda,ada@example.org\n')
    const asNdjson = await runCli(['push', csv, '--dry-run'], {})
    expect(asNdjson.code).to.equal(1)
    expect(asNdjson.stderr).to.equal(
      `Error: ${csv} does not hold NDJSON (one JSON object per line); it looks like CSV (hint: pass --format csv, or name the file .csv)\n`,
    )
  })

  describeInMysqlRun('on MySQL', function () {
    const serverUrl = process.env['LEADS_TEST_MYSQL_URL']!
    const name = `${new URL(serverUrl).pathname.slice(1)}_unmigrated_${process.pid}`
    const urlOf = (database: string) => Object.assign(new URL(serverUrl), {pathname: `/${database}`}).toString()
    let admin: mysql.Connection

    before(async function () {
      admin = await mysql.createConnection({uri: serverUrl})
      await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`)
    })
    after(async function () {
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``)
      await admin.end()
    })

    it('an unmigrated database tells operator commands to run leads migrate, and the daemon too', async function () {
      const env = {LEADS_DATABASE_URL: urlOf(name), LEADS_MASTER_KEY: MASTER_KEY, LEADS_LOG_LEVEL: 'silent'}
      const listed = await runCli(['customers', 'list'], env)
      expect(listed.code).to.equal(1)
      expect(listed.stderr).to.equal(
        'Error: the database has no table customers: it is not migrated (hint: run `leads migrate` with the same LEADS_DATABASE_URL)\n',
      )
      const daemon = await runCliProcess(['daemon'], {...env, LEADS_PORT: '0'})
      expect(daemon.code).to.equal(1)
      expect(daemon.stderr).to.match(
        /^Error: LEADS_DATABASE_URL has \d+ pending migration\(s\), so the daemon does not start \(hint: run `leads migrate` with the same LEADS_DATABASE_URL, then start the daemon again\)\n$/,
      )
    })

    it('leads migrate --status against an empty database lists every migration as pending and creates no table, as on SQLite', async function () {
      const empty = `${name}_status`
      await admin.query(`CREATE DATABASE \`${empty}\` CHARACTER SET utf8mb4`)
      try {
        const env = {LEADS_DATABASE_URL: urlOf(empty), LEADS_MASTER_KEY: MASTER_KEY}
        const result = await runCli(['migrate', '--status'], env)
        expect(result.code, result.stderr).to.equal(0)
        const rows = result.stdout.trim().split('\n')
        expect(rows.length).to.be.greaterThan(10)
        for (const row of rows) expect(row).to.match(/^\d{14}_[a-z0-9_]+\tpending$/)
        const json = await runCliJson(['migrate', '--status'], env)
        expect(json.migrations.map((migration: {name: string}) => migration.name)).to.deep.equal(rows.map((row) => row.split('\t')[0]))
        const [tables] = await admin.query('SELECT table_name FROM information_schema.tables WHERE table_schema = ?', [empty])
        expect(tables).to.deep.equal([])
        // Once migrated, the same command reads what was applied.
        expect((await runCli(['migrate'], env)).code).to.equal(0)
        const applied = await runCliJson(['migrate', '--status'], env)
        expect(applied.migrations.every((migration: {applied: boolean}) => migration.applied)).to.equal(true)
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS \`${empty}\``)
      }
    })

    it('leads status gives the same hint for a database that does not exist or refuses the login, not "is the database running?"', async function () {
      const missing = `${name}_missing`
      const absent = JSON.parse((await runCli(['status', '--json'], {LEADS_DATABASE_URL: urlOf(missing), LEADS_MASTER_KEY: MASTER_KEY})).stdout)
      const server = new URL(serverUrl)
      expect(absent.checks[0]).to.include({
        check: 'database',
        ok: false,
        hint: `create it (mysql -h ${server.hostname} -P ${server.port || '3306'} -u ${server.username || 'root'} -p -e 'CREATE DATABASE \`${missing}\`'), then run \`leads migrate\``,
      })
      const refusedUrl = Object.assign(new URL(urlOf(name)), {username: 'leads_nobody', password: 'hunter2'}).toString()
      const refused = await runCli(['status', '--json'], {LEADS_DATABASE_URL: refusedUrl, LEADS_MASTER_KEY: MASTER_KEY})
      expect(refused.stdout).not.to.include('hunter2')
      expect(JSON.parse(refused.stdout).checks[0]).to.include({
        check: 'database',
        ok: false,
        hint: 'check the user and password in LEADS_DATABASE_URL, and that the user has rights on the database',
      })
    })

    it('a database that does not exist is named, with how to create it', async function () {
      const missing = `${name}_missing`
      const result = await runCli(['customers', 'list'], {LEADS_DATABASE_URL: urlOf(missing), LEADS_MASTER_KEY: MASTER_KEY})
      expect(result.code).to.equal(1)
      const server = new URL(serverUrl)
      expect(result.stderr).to.equal(
        `Error: LEADS_DATABASE_URL names database "${missing}", which does not exist on ${server.hostname}:${server.port || '3306'} (hint: create it (mysql -h ${server.hostname} -P ${server.port || '3306'} -u ${server.username || 'root'} -p -e 'CREATE DATABASE \`${missing}\`'), then run \`leads migrate\`)\n`,
      )
      // The operator's next step, leads migrate, says the same.
      const migrated = await runCli(['migrate'], {LEADS_DATABASE_URL: urlOf(missing), LEADS_MASTER_KEY: MASTER_KEY})
      expect(migrated.code).to.equal(1)
      expect(migrated.stderr).to.equal(result.stderr)
    })
  })
})
