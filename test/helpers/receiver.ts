import fs from 'node:fs'
import type {IncomingHttpHeaders} from 'node:http'
import https from 'node:https'
import type {AddressInfo} from 'node:net'
import path from 'node:path'

import {PROJECT_ROOT} from './cli.js'

export interface ReceivedRequest {
  headers: IncomingHttpHeaders
  /** The header names as they came on the wire, case kept (`headers` has them lower-cased). */
  headerNames: string[]
  /** The exact bytes sent, as signatures must be checked over them. */
  rawBody: Buffer
  receivedAt: number
}

export interface Reply {
  status: number
  body?: string
  headers?: Record<string, string>
  /** Wait this long before answering (for timeouts). */
  delayMs?: number
  /** Close the connection instead of answering, as a crashing receiver does. */
  reset?: boolean
  /** Send the status at once, then the body one byte every this many milliseconds. */
  trickleMs?: number
  /** Answer only once this settles (after delayMs): the test decides when a request ends. */
  until?: Promise<unknown>
}

/**
 * A real local HTTPS webhook receiver with the test CA's certificate for `localhost`. Replies
 * come from a queue (then `fallback`); every request is recorded.
 */
export class Receiver {
  readonly requests: ReceivedRequest[] = []
  private readonly replies: Reply[] = []
  private waiters: Array<{count: number; resolve: () => void}> = []
  fallback: Reply = {status: 200, body: 'ok'}
  /** Requests received and not answered yet, and the most there were at once. */
  open = 0
  mostOpen = 0
  private server: https.Server | null = null
  port = 0

  get url(): string {
    return `https://localhost:${this.port}/hooks/leads`
  }

  async start(): Promise<this> {
    const tls = path.join(PROJECT_ROOT, 'test/fixtures/tls')
    this.server = https.createServer(
      {key: fs.readFileSync(path.join(tls, 'server-key.pem')), cert: fs.readFileSync(path.join(tls, 'server-cert.pem'))},
      (request, response) => {
        const chunks: Buffer[] = []
        request.on('data', (chunk: Buffer) => chunks.push(chunk))
        request.on('end', () => {
          const headerNames = request.rawHeaders.filter((_, index) => index % 2 === 0)
          this.requests.push({headers: request.headers, headerNames, rawBody: Buffer.concat(chunks), receivedAt: Date.now()})
          this.mostOpen = Math.max(this.mostOpen, ++this.open)
          response.once('close', () => this.open--)
          this.waiters = this.waiters.filter((waiter) => {
            if (this.requests.length < waiter.count) return true
            waiter.resolve()
            return false
          })
          const reply = this.replies.shift() ?? this.fallback
          const answer = () => {
            if (response.destroyed) return
            if (reply.reset) return void request.socket.destroy()
            response.writeHead(reply.status, {'content-type': 'text/plain', ...reply.headers})
            if (reply.trickleMs === undefined) return void response.end(reply.body ?? '')
            const bytes = [...Buffer.from(reply.body ?? '')]
            const drip = setInterval(() => {
              if (response.destroyed || bytes.length === 0) {
                clearInterval(drip)
                if (!response.destroyed) response.end()
                return
              }
              response.write(Buffer.from([bytes.shift()!]))
            }, reply.trickleMs)
          }
          setTimeout(() => (reply.until ? void reply.until.then(answer, answer) : answer()), reply.delayMs ?? 0)
        })
      },
    )
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve))
    this.port = (this.server.address() as AddressInfo).port
    return this
  }

  /** Queues the next replies, in order. */
  reply(...replies: Reply[]): void {
    this.replies.push(...replies)
  }

  /** Resolves once `count` requests have arrived in all; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`expected ${count} requests, got ${this.requests.length}`)), timeoutMs)
      this.waiters.push({count, resolve: () => (clearTimeout(timer), resolve())})
    })
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections()
    await new Promise<void>((resolve) => this.server?.close(() => resolve()))
  }
}
