import os from 'node:os'
import path from 'node:path'

import {createClient} from 'redis'

import {type Config, loadConfig} from '../../src/config/config.js'

/** A storage backend the suite runs against: SQLite always, MariaDB (+ Redis) when configured. */
export interface Backend {
  name: 'sqlite' | 'mysql'
  env: Record<string, string>
  config(extra?: Record<string, string>): Config
}

// A fixed test key: tests must not write a master.key file into the working tree.
export const TEST_MASTER_KEY = 'ab'.repeat(32)

const sqliteFile = path.join(os.tmpdir(), `leads-test-${process.pid}.db`)

function backend(name: Backend['name'], env: Record<string, string>): Backend {
  return {
    name,
    env,
    config: (extra = {}) => loadConfig({LEADS_MASTER_KEY: TEST_MASTER_KEY, LEADS_LOG_LEVEL: 'silent', ...env, ...extra}),
  }
}

export const SQLITE_FILE = sqliteFile

/** The backends this run covers. With CI=true both external services are required (see root hooks). */
export function backends(): Backend[] {
  const list = [backend('sqlite', {LEADS_DATABASE_URL: `sqlite://${sqliteFile}`})]
  const mysqlUrl = process.env['LEADS_TEST_MYSQL_URL']
  if (mysqlUrl) {
    const env: Record<string, string> = {LEADS_DATABASE_URL: mysqlUrl}
    const redisUrl = process.env['LEADS_TEST_REDIS_URL']
    if (redisUrl) env['LEADS_REDIS_URL'] = redisUrl
    list.push(backend('mysql', env))
  }
  return list
}

/** Empties the backend's Redis database (the test one, never another), as a flushed or restarted-empty Redis would be. */
export async function flushRedisOf(backend: Backend): Promise<void> {
  const url = backend.env['LEADS_REDIS_URL']
  if (!url) return
  const client = createClient({url})
  await client.connect()
  try {
    await client.flushDb()
  } finally {
    await client.close()
  }
}

/** Declares the suite once per backend: `describe('on sqlite', ...)`, `describe('on mysql', ...)`. */
export function forEachBackend(suite: (backend: Backend) => void): void {
  for (const each of backends()) {
    describe(`on ${each.name}`, function () {
      suite(each)
    })
  }
}

/**
 * Declares a suite that needs a server binary on this machine (a `mariadbd` or `redis-server` it
 * starts itself) only in the MySQL run, `LEADS_TEST_MYSQL_URL` set, which `.ci/run` always is.
 * `npm test` with no environment then passes on a machine with or without those binaries, and a
 * SQLite-only run sends no MySQL statement to the sharding check.
 */
export function describeInMysqlRun(title: string, suite: (this: Mocha.Suite) => void): void {
  if (process.env['LEADS_TEST_MYSQL_URL']) describe(title, suite)
}

/** As describeInMysqlRun, for a suite that uses the run's shared Redis (`LEADS_TEST_REDIS_URL`), declared only when it is named. */
export function describeWithTestRedis(title: string, suite: (this: Mocha.Suite, redisUrl: string) => void): void {
  const redisUrl = process.env['LEADS_TEST_REDIS_URL']
  if (redisUrl) {
    describeInMysqlRun(title, function () {
      suite.call(this, redisUrl)
    })
  }
}
