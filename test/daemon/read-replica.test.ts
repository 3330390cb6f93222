import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'
import mysql from 'mysql2/promise'

import {loadConfig} from '../../src/config/config.js'
import {createDb} from '../../src/db/knex.js'
import {migrateLatest} from '../../src/db/migrate.js'
import {type Backend, describeInMysqlRun, TEST_MASTER_KEY} from '../helpers/backends.js'
import {runCliProcess} from '../helpers/cli.js'
import {newTenant} from '../helpers/fixtures.js'
import {freePort, killMariadb, type OwnMariadb, startMariadb, waitUntil} from '../helpers/local-servers.js'
import {startTestDaemon} from '../helpers/test-daemon.js'

const HINT =
  '(hint: point it at the primary (or the balancer in front of the writer node); reading from a replica is not supported (docs/operations.md, "Read replicas"))'

/**
 * The service has one database URL and writes through it, also to read the change feed (a
 * reader numbers pending leads), so it refuses a read replica rather than diverge from the
 * primary: a primary (binary log on) and an asynchronous replica of it, both throwaway mariadbds
 * of this test's own, never the shared server.
 */
describeInMysqlRun('a read replica as the database', function () {
  this.timeout(120_000)
  let dir: string
  let primary: OwnMariadb
  let replica: OwnMariadb
  let replicaPort: number

  const query = async <T>(url: string, sql: string): Promise<T[]> => {
    const connection = await mysql.createConnection({uri: url})
    try {
      return ((await connection.query(sql)) as unknown as [T[]])[0]
    } finally {
      await connection.end()
    }
  }
  const env = (url: string) => ({LEADS_DATABASE_URL: `${url}/leads`, LEADS_MASTER_KEY: TEST_MASTER_KEY, LEADS_LOG_LEVEL: 'silent'})
  const refusal = (reason: string) =>
    `Error: LEADS_DATABASE_URL points at a server that is a read replica or read-only (${reason}), so the service does not write to it ${HINT}\n`
  /** `leads daemon` and `leads migrate` against the replica: both must fail with `expected` on stderr. */
  const expectRefused = async (reason: string) => {
    for (const args of [['daemon'], ['migrate']]) {
      const result = await runCliProcess(args, {...env(replica.url), LEADS_PORT: '0'})
      expect(result.code, `leads ${args[0]}`).to.equal(1)
      expect(result.stderr, `leads ${args[0]}`).to.equal(refusal(reason))
    }
  }

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-replica-'))
    const primaryPort = await freePort()
    primary = await startMariadb(path.join(dir, 'primary'), primaryPort, ['--server-id=1', '--log-bin=binlog', '--binlog-format=ROW'])
    const db = createDb({client: 'mysql', url: `${primary.url}/mysql`})
    await db.raw('CREATE DATABASE leads CHARACTER SET utf8mb4')
    await db.destroy()
    const leads = createDb({client: 'mysql', url: `${primary.url}/leads`})
    await migrateLatest(leads)
    await leads.destroy()
    replicaPort = await freePort()
    replica = await startMariadb(path.join(dir, 'replica'), replicaPort, ['--server-id=2'])
    // The replica copies the primary's binary log from its first event: the database and its schema.
    await query(replica.url, `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primaryPort}, MASTER_USER='root', MASTER_USE_GTID=slave_pos`)
    await query(replica.url, 'START SLAVE')
    await waitUntil(
      async () => (await query<{n: number}>(replica.url, `SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = 'leads'`))[0]!.n > 0,
      'the replica to copy the schema',
      30_000,
    )
  })
  after(async function () {
    for (const server of [replica, primary]) if (server) await killMariadb(server)
    if (dir) fs.rmSync(dir, {recursive: true, force: true})
  })

  it('refuses a replica that applies another server’s changes, in one line saying what to do', async function () {
    await expectRefused('it replicates from another server: Slaves_running is 1')
  })

  it('refuses a server with read_only ON, which root could still write past', async function () {
    await query(replica.url, 'SET GLOBAL read_only = ON')
    await expectRefused('read_only is ON')
  })

  it('refuses a server started with innodb_read_only', async function () {
    // Stopped cleanly: InnoDB read-only cannot start on a log that needs recovery.
    const exited = new Promise((resolve) => replica.child.once('exit', resolve))
    await query(replica.url, 'SHUTDOWN')
    await exited
    replica = await startMariadb(path.join(dir, 'replica'), replicaPort, ['--server-id=2', '--innodb-read-only'])
    await expectRefused('innodb_read_only is ON')
  })

  it('serves from the primary, and from the replica once it is promoted (replication stopped, read_only OFF)', async function () {
    const backendOn = (url: string): Backend => ({
      name: 'mysql',
      env: env(url),
      config: (extra = {}) => loadConfig({...env(url), ...extra}),
    })
    const onPrimary = await startTestDaemon(backendOn(primary.url), {role: 'api'})
    const tenant = await newTenant(onPrimary.services)
    await onPrimary.stop()

    await killMariadb(replica)
    replica = await startMariadb(path.join(dir, 'replica'), replicaPort, ['--server-id=2'])
    // What the primary wrote reaches the replica; then the replica is promoted.
    await waitUntil(
      async () => (await query<{n: number}>(replica.url, `SELECT COUNT(*) AS n FROM leads.customers`))[0]!.n > 0,
      'the customer on the replica',
      30_000,
    )
    await query(replica.url, 'STOP SLAVE')
    await query(replica.url, 'RESET SLAVE ALL')
    const promoted = await startTestDaemon(backendOn(replica.url), {role: 'api'})
    try {
      const created = await promoted.request('/api/agents/crm/leads', {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({contact_name: 'After Promotion', contact_email: 'promoted@example.org'}),
      })
      expect(created.status).to.equal(201)
    } finally {
      await promoted.stop()
    }
  })
})
