import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import nock from 'nock'

import type {DatabaseConfig} from '../../src/config/config.js'
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
 * An empty SQLite store with every migration applied, made once per process: each test file
 * starts on a copy of it, as migrating afresh for every file cost about as much as a small
 * file's tests.
 */
let sqliteTemplate: Promise<string> | undefined
function migratedSqliteTemplate(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const file = path.join(os.tmpdir(), `leads-test-template-${process.pid}.db`)
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, {force: true})
    await migrate({client: 'sqlite', filename: file, url: `sqlite://${file}`})
    process.once('exit', () => fs.rmSync(file, {force: true}))
    return file
  })()
  return sqliteTemplate
}

async function migrate(database: DatabaseConfig): Promise<void> {
  const db = createDb(database)
  try {
    await migrateLatest(db)
  } finally {
    await db.destroy()
  }
}

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
      if (backend.name === 'sqlite') fs.copyFileSync(await migratedSqliteTemplate(), SQLITE_FILE)
      else await migrate(backend.config().database)
    }
    const redisUrl = process.env['LEADS_TEST_REDIS_URL']
    if (redisUrl) await (await connectRedis({mode: 'single', url: redisUrl})).close()
  },
  afterAll() {
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(SQLITE_FILE + suffix, {force: true})
    if (ownRecording) fs.rmSync(process.env[SQL_RECORD_VARIABLE]!, {force: true})
  },
}
