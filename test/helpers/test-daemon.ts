import {randomUUID} from 'node:crypto'
import {Writable} from 'node:stream'

import {type DaemonOptions, type RunningDaemon, startDaemon} from '../../daemon/server.js'
import {createDb, type Db} from '../../src/db/knex.js'
import {createLogger} from '../../src/log/logger.js'
import type {Backend} from './backends.js'

export interface TestResponse {
  status: number
  headers: Headers
  body: any // JSON of any shape, asserted field by field
  text: string
}

export interface RequestOptions {
  method?: string
  token?: string
  customerId?: string
  headers?: Record<string, string>
  body?: string | Uint8Array
}

export interface TestDaemon extends RunningDaemon {
  /**
   * The database handle the daemon runs on, opened by the test and closed after the daemon
   * stops: for rows no API returns, and for taking the database or its pool away underneath.
   */
  readonly db: Db
  /** Every log line the daemon wrote, for assertions that secrets stay out of logs. */
  readonly logs: string[]
  request(path: string, options?: RequestOptions): Promise<TestResponse>
}

/** Starts the real daemon in-process on an ephemeral loopback port. */
export async function startTestDaemon(backend: Backend, options: DaemonOptions = {}, env: Record<string, string> = {}): Promise<TestDaemon> {
  const logs: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'))
      done()
    },
  })
  const config = backend.config({LEADS_PORT: '0', LEADS_HOST: '127.0.0.1', ...env})
  const logger = createLogger('info', sink)
  const db = createDb(config.database, logger)
  let daemon: RunningDaemon
  try {
    // Each test daemon counts rate limits under its own Redis prefix unless a test shares one on purpose.
    daemon = await startDaemon(config, logger, {autoMigrate: false, rateLimitKeyPrefix: `test:${randomUUID()}`, db, ...options})
  } catch (error) {
    await db.destroy()
    throw error
  }
  return {
    ...daemon,
    url: daemon.url,
    services: daemon.services,
    db,
    async stop() {
      try {
        await daemon.stop()
      } finally {
        await db.destroy()
      }
    },
    logs,
    async request(path, options = {}) {
      const headers: Record<string, string> = {...options.headers}
      if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`
      if (options.customerId !== undefined) headers['x-customer-id'] = options.customerId
      const response = await fetch(daemon.url + path, {method: options.method ?? 'GET', headers, body: options.body})
      const text = await response.text()
      let body: unknown = null
      try {
        body = JSON.parse(text)
      } catch {
        body = null
      }
      return {status: response.status, headers: response.headers, body, text}
    },
  }
}
