import {createRequire} from 'node:module'

import type * as Undici from 'undici'
import type {Dispatcher, Pool} from 'undici'

import {checkLiteralTarget, guardedLookup, isAllowedHost, SsrfBlockedError, type TargetPolicy} from '../webhooks/ssrf.js'

/**
 * undici, loaded with the first pool: every process builds a sender, but only a worker sends, and
 * loading undici is a large share of an operator command's start-up (bench/cli-startup.sh).
 */
let undici: typeof Undici | null = null
const loadUndici = () => (undici ??= createRequire(import.meta.url)('undici') as typeof Undici)

export const RESPONSE_SNIPPET_BYTES = 1024

export interface SendRequest {
  url: string
  body: string
  headers: Record<string, string>
  timeoutMs: number
}

/**
 * What one POST came to. `durationMs` is the receiver's time: from the moment the request is
 * written to a connection to the end of the answer, never the time spent waiting for a pooled
 * connection or opening one; 0 when the request never reached a connection.
 */
export type SendResult =
  {kind: 'response'; statusCode: number; durationMs: number; snippet: string} | {kind: 'timeout' | 'network' | 'blocked'; durationMs: number; error: string}

interface SenderOptions {
  /** Connections per receiver origin; requests beyond it queue inside the sender. */
  maxSockets?: number
}

const DEFAULT_MAX_SOCKETS = 256
/** Parsed URLs kept at most (a webhook per customer, 20 at most each). */
const MAX_PARSED_URLS = 10_000

interface Target {
  origin: string
  path: string
  url: URL
  pool: Pool
}

/**
 * POSTs a delivery over HTTPS with undici: one keep-alive connection pool per origin and
 * timeout, which costs a worker about half the CPU of Node's own HTTP client per request. Each
 * pool resolves names through the SSRF guard, so a connection only ever opens to an address that
 * passed the check; IP-literal hosts, which never reach a lookup, are checked before the request.
 *
 * `timeoutMs` is the receiver's time, as `durationMs` is: the clock starts when the request is
 * written to a connection, so a request queued behind `maxSockets` busy ones is not charged for
 * the wait. Opening a new connection (DNS, TCP, TLS) is bounded by the same timeout on its own.
 */
export class DeliverySender {
  private readonly pools = new Map<string, Pool>()
  private readonly targets = new Map<string, Target>()
  private readonly maxSockets: number

  constructor(
    private readonly policy: TargetPolicy,
    options: SenderOptions = {},
  ) {
    this.maxSockets = options.maxSockets ?? DEFAULT_MAX_SOCKETS
    if (!Number.isInteger(this.maxSockets) || this.maxSockets < 1) throw new RangeError(`maxSockets must be a positive integer, got ${this.maxSockets}`)
  }

  send(request: SendRequest): Promise<SendResult> {
    const target = this.target(request.url, request.timeoutMs)
    try {
      checkLiteralTarget(target.url, this.policy)
    } catch (error) {
      return Promise.resolve({kind: 'blocked', durationMs: 0, error: (error as Error).message})
    }
    return new Promise<SendResult>((resolve) => {
      target.pool.dispatch(
        {origin: target.origin, path: target.path, method: 'POST', headers: request.headers, body: request.body},
        new AttemptHandler(request.timeoutMs, resolve),
      )
    })
  }

  /** Closes the pools' connections. */
  close(): void {
    for (const pool of this.pools.values()) void pool.destroy()
    this.pools.clear()
    this.targets.clear()
  }

  /**
   * Each webhook URL is parsed, and its pool found, once: a worker sends to the same few URLs
   * thousands of times.
   */
  private target(url: string, timeoutMs: number): Target {
    const key = `${timeoutMs} ${url}`
    let target = this.targets.get(key)
    if (!target) {
      if (this.targets.size >= MAX_PARSED_URLS) this.targets.clear()
      const parsed = new URL(url)
      target = {origin: parsed.origin, path: `${parsed.pathname}${parsed.search}`, url: parsed, pool: this.poolFor(parsed, timeoutMs)}
      this.targets.set(key, target)
    }
    return target
  }

  /** A pool per origin and timeout: the timeout also bounds opening a connection, a pool-wide setting. */
  private poolFor(url: URL, timeoutMs: number): Pool {
    const key = `${timeoutMs} ${url.origin}`
    let pool = this.pools.get(key)
    if (!pool) {
      const allowed = isAllowedHost(url, this.policy.allowHosts)
      pool = new (loadUndici().Pool)(url.origin, {
        connections: this.maxSockets,
        connect: {timeout: timeoutMs, lookup: guardedLookup(this.policy, () => allowed)},
        // The attempt's own timer (AttemptHandler) bounds the answer.
        headersTimeout: 0,
        bodyTimeout: 0,
      })
      this.pools.set(key, pool)
    }
    return pool
  }
}

/** One attempt's request as undici dispatches it: times the receiver and keeps the start of its answer. */
class AttemptHandler implements Dispatcher.DispatchHandler {
  private writtenAt: number | null = null
  private timer: NodeJS.Timeout | undefined
  private timedOut = false
  private statusCode = 0
  private readonly chunks: Buffer[] = []
  private kept = 0

  constructor(
    private readonly timeoutMs: number,
    private readonly resolve: (result: SendResult) => void,
  ) {}

  /** Called once the request is about to be written to an open connection. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.writtenAt = performance.now()
    this.timer = setTimeout(() => {
      this.timedOut = true
      controller.abort(new Error('timed out'))
    }, this.timeoutMs)
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.statusCode = statusCode
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.kept >= RESPONSE_SNIPPET_BYTES) return
    const kept = chunk.subarray(0, RESPONSE_SNIPPET_BYTES - this.kept)
    this.chunks.push(kept)
    this.kept += kept.length
  }

  onResponseEnd(): void {
    this.settle({kind: 'response', statusCode: this.statusCode, durationMs: this.elapsed(), snippet: Buffer.concat(this.chunks).toString('utf8')})
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.timedOut) this.settle({kind: 'timeout', durationMs: this.elapsed(), error: `no response within the timeout (${this.elapsed()} ms)`})
    else if ((error as {code?: string}).code === 'UND_ERR_CONNECT_TIMEOUT')
      this.settle({kind: 'timeout', durationMs: 0, error: `no connection within the timeout (${this.timeoutMs} ms)`})
    else this.settle(failure(error, this.elapsed()))
  }

  private elapsed(): number {
    return this.writtenAt === null ? 0 : Math.round(performance.now() - this.writtenAt)
  }

  private settle(result: SendResult): void {
    clearTimeout(this.timer)
    this.resolve(result)
  }
}

function failure(error: Error, durationMs: number): SendResult {
  // The guard's refusal reaches undici through the lookup callback, sometimes wrapped.
  const cause = (error as {cause?: unknown}).cause
  const blocked = [error, cause].find(
    (candidate) => candidate instanceof SsrfBlockedError || (candidate as {code?: string} | undefined)?.code === 'ESSRFBLOCKED',
  )
  if (blocked) return {kind: 'blocked', durationMs, error: (blocked as Error).message}
  const code = (error as {code?: string}).code
  // undici's name for a connection the receiver closed mid-exchange; operators know Node's.
  if (code === 'UND_ERR_SOCKET') return {kind: 'network', durationMs, error: 'ECONNRESET: the receiver closed the connection without answering'}
  return {kind: 'network', durationMs, error: code ? `${code}: ${error.message}` : error.message}
}
