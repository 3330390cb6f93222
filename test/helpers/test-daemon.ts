import {randomUUID} from 'node:crypto'
import {Writable} from 'node:stream'

import {type DaemonOptions, type RunningDaemon, startDaemon} from '../../daemon/server.js'
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
  // Each test daemon counts rate limits under its own Redis prefix unless a test shares one on purpose.
  const daemon = await startDaemon(config, createLogger('info', sink), {autoMigrate: false, rateLimitKeyPrefix: `test:${randomUUID()}`, ...options})
  return {
    ...daemon,
    url: daemon.url,
    services: daemon.services,
    stop: () => daemon.stop(),
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
