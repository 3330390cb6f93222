import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import nock from 'nock'

import {createDb} from '../../src/db/knex.js'
import {migrateLatest} from '../../src/db/migrate.js'
import {connectRedis} from '../../src/db/redis.js'
import {backends, SQLITE_FILE} from './backends.js'
import {recordStatements, SQL_RECORD_VARIABLE} from './sql-recorder.js'

// Every statement the run sends, from this process and from the processes it starts, recorded
// for the sharding check (test/src/db/shard-key.check.ts), which runs after every test file. A
// recording named from outside (a parent run, or a developer keeping one) is joined rather than
// started afresh, and then left in place.
const ownRecording = !process.env[SQL_RECORD_VARIABLE]
if (ownRecording) {
  process.env[SQL_RECORD_VARIABLE] = path.join(os.tmpdir(), `leads-test-sql-${process.pid}.jsonl`)
  fs.rmSync(process.env[SQL_RECORD_VARIABLE], {force: true})
}
const preload = `--import ${new URL('sql-recording-preload.js', import.meta.url).href}`
if (!(process.env['NODE_OPTIONS'] ?? '').includes(preload)) process.env['NODE_OPTIONS'] = `${process.env['NODE_OPTIONS'] ?? ''} ${preload}`.trim()
recordStatements(process.env[SQL_RECORD_VARIABLE]!)

/**
 * Root hooks: no real outbound network (loopback only), every backend migrated once, and on CI
 * a hard failure when MariaDB or Redis is missing, so a run can never pass on SQLite alone.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000)
    nock.disableNetConnect()
    nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\]|::1)(:\d+)?$/.test(host))

    if (process.env['CI'] === 'true') {
      for (const variable of ['LEADS_TEST_MYSQL_URL', 'LEADS_TEST_REDIS_URL']) {
        if (!process.env[variable]) throw new Error(`CI=true but ${variable} is not set; .ci/run must export it`)
      }
    }
    for (const backend of backends()) {
      const db = createDb(backend.config().database)
      try {
        await migrateLatest(db)
      } finally {
        await db.destroy()
      }
    }
    const redisUrl = process.env['LEADS_TEST_REDIS_URL']
    if (redisUrl) await (await connectRedis({mode: 'single', url: redisUrl})).close()
  },
  afterAll() {
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(SQLITE_FILE + suffix, {force: true})
    if (ownRecording) fs.rmSync(process.env[SQL_RECORD_VARIABLE]!, {force: true})
  },
}
