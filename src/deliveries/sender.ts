import https from 'node:https'

import {checkLiteralTarget, guardedLookup, isAllowedHost, SsrfBlockedError, type TargetPolicy} from '../webhooks/ssrf.js'

export const RESPONSE_SNIPPET_BYTES = 1024

export interface SendRequest {
  url: string
  body: string
  headers: Record<string, string>
  timeoutMs: number
}

/**
 * What one POST came to. `durationMs` is the receiver's time: from the moment the request has a
 * socket (a fresh socket's DNS, connect and TLS handshake included) to the end of the answer,
 * never the time spent waiting for a pooled socket; 0 when the request never got one.
 */
export type SendResult =
  {kind: 'response'; statusCode: number; durationMs: number; snippet: string} | {kind: 'timeout' | 'network' | 'blocked'; durationMs: number; error: string}

interface SenderOptions {
  /** Sockets per receiver origin; requests beyond it queue inside the sender. */
  maxSockets?: number
}

const DEFAULT_MAX_SOCKETS = 256
/** Parsed URLs kept at most (a webhook per customer, 20 at most each). */
const MAX_PARSED_URLS = 10_000

/**
 * POSTs a delivery over HTTPS with one keep-alive agent per origin. Each agent resolves names
 * through the SSRF guard, so a socket only ever connects to an address that passed the check;
 * IP-literal hosts, which never reach a lookup, are checked before the request.
 *
 * `timeoutMs` is the receiver's time, as `durationMs` is: the clock starts when the request is
 * on a socket, so a request queued behind `maxSockets` busy ones is not charged for the wait.
 */
export class DeliverySender {
  private readonly agents = new Map<string, https.Agent>()
  private readonly targets = new Map<string, {url: URL; agent: https.Agent}>()
  private readonly maxSockets: number

  constructor(
    private readonly policy: TargetPolicy,
    options: SenderOptions = {},
  ) {
    this.maxSockets = options.maxSockets ?? DEFAULT_MAX_SOCKETS
    if (!Number.isInteger(this.maxSockets) || this.maxSockets < 1) throw new RangeError(`maxSockets must be a positive integer, got ${this.maxSockets}`)
  }

  async send(request: SendRequest): Promise<SendResult> {
    let onSocketAt: number | null = null
    const elapsed = () => (onSocketAt === null ? 0 : Math.round(performance.now() - onSocketAt))
    const {url, agent} = this.target(request.url)
    try {
      checkLiteralTarget(url, this.policy)
    } catch (error) {
      return {kind: 'blocked', durationMs: 0, error: (error as Error).message}
    }
    return new Promise<SendResult>((resolve) => {
      let timer: NodeJS.Timeout | undefined
      let timedOut = false
      const settle = (result: SendResult) => {
        clearTimeout(timer)
        resolve(result)
      }
      const fail = (error: Error) =>
        settle(timedOut ? {kind: 'timeout', durationMs: elapsed(), error: `no response within the timeout (${elapsed()} ms)`} : failure(error, elapsed()))
      const outgoing = https.request(
        url,
        {method: 'POST', agent, headers: {...request.headers, 'content-length': Buffer.byteLength(request.body)}},
        (response) => {
          const chunks: Buffer[] = []
          let kept = 0
          response.on('data', (chunk: Buffer) => {
            if (kept < RESPONSE_SNIPPET_BYTES) {
              chunks.push(chunk.subarray(0, RESPONSE_SNIPPET_BYTES - kept))
              kept += Math.min(chunk.length, RESPONSE_SNIPPET_BYTES - kept)
            }
          })
          response.on('end', () =>
            settle({kind: 'response', statusCode: response.statusCode ?? 0, durationMs: elapsed(), snippet: Buffer.concat(chunks).toString('utf8')}),
          )
          response.on('error', fail)
        },
      )
      // 'socket' fires once the agent hands this request a socket: at once when one is free or
      // newly made, later when the request queued behind maxSockets busy ones.
      outgoing.once('socket', () => {
        onSocketAt = performance.now()
        timer = setTimeout(() => {
          timedOut = true
          outgoing.destroy(new Error('timed out'))
        }, request.timeoutMs)
      })
      outgoing.on('error', fail)
      outgoing.end(request.body)
    })
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    for (const agent of this.agents.values()) agent.destroy()
    this.agents.clear()
    this.targets.clear()
  }

  /**
   * Each webhook URL is parsed, and its origin's agent found, once: a worker sends to the same few
   * URLs thousands of times.
   */
  private target(url: string): {url: URL; agent: https.Agent} {
    let target = this.targets.get(url)
    if (!target) {
      if (this.targets.size >= MAX_PARSED_URLS) this.targets.clear()
      const parsed = new URL(url)
      target = {url: parsed, agent: this.agentFor(parsed)}
      this.targets.set(url, target)
    }
    return target
  }

  private agentFor(url: URL): https.Agent {
    let agent = this.agents.get(url.origin)
    if (!agent) {
      const allowed = isAllowedHost(url, this.policy.allowHosts)
      agent = new https.Agent({keepAlive: true, maxSockets: this.maxSockets, lookup: guardedLookup(this.policy, () => allowed)})
      this.agents.set(url.origin, agent)
    }
    return agent
  }
}

function failure(error: Error, durationMs: number): SendResult {
  if (error instanceof SsrfBlockedError || (error as {code?: string}).code === 'ESSRFBLOCKED') return {kind: 'blocked', durationMs, error: error.message}
  const code = (error as {code?: string}).code
  return {kind: 'network', durationMs, error: code ? `${code}: ${error.message}` : error.message}
}
