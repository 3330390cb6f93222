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
