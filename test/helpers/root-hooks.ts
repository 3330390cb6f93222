import fs from 'node:fs'

import nock from 'nock'

import {createDb} from '../../src/db/knex.js'
import {migrateLatest} from '../../src/db/migrate.js'
import {connectRedis} from '../../src/db/redis.js'
import {backends, SQLITE_FILE} from './backends.js'

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
  },
}
