import https from 'node:https'

import {checkLiteralTarget, guardedLookup, isAllowedHost, SsrfBlockedError, type TargetPolicy} from '../webhooks/ssrf.js'

export const RESPONSE_SNIPPET_BYTES = 1024

export interface SendRequest {
  url: string
  body: string
  headers: Record<string, string>
  timeoutMs: number
}

export type SendResult =
  | {kind: 'response'; statusCode: number; durationMs: number; snippet: string}
  | {kind: 'timeout' | 'network' | 'blocked'; durationMs: number; error: string}

/**
 * POSTs a delivery over HTTPS with one keep-alive agent per origin. Each agent resolves names
 * through the SSRF guard, so a socket only ever connects to an address that passed the check;
 * IP-literal hosts, which never reach a lookup, are checked before the request.
 */
export class DeliverySender {
  private readonly agents = new Map<string, https.Agent>()

  constructor(private readonly policy: TargetPolicy) {}

  async send(request: SendRequest): Promise<SendResult> {
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    const url = new URL(request.url)
    try {
      checkLiteralTarget(url, this.policy)
    } catch (error) {
      return {kind: 'blocked', durationMs: elapsed(), error: (error as Error).message}
    }
    return new Promise((resolve) => {
      const signal = AbortSignal.timeout(request.timeoutMs)
      const outgoing = https.request(
        url,
        {
          method: 'POST',
          agent: this.agentFor(url),
          headers: {...request.headers, 'content-length': Buffer.byteLength(request.body)},
          signal,
        },
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
            resolve({kind: 'response', statusCode: response.statusCode ?? 0, durationMs: elapsed(), snippet: Buffer.concat(chunks).toString('utf8')}),
          )
          response.on('error', (error) => resolve(failure(error, signal, elapsed())))
        },
      )
      outgoing.on('error', (error) => resolve(failure(error, signal, elapsed())))
      outgoing.end(request.body)
    })
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    for (const agent of this.agents.values()) agent.destroy()
    this.agents.clear()
  }

  private agentFor(url: URL): https.Agent {
    let agent = this.agents.get(url.origin)
    if (!agent) {
      const allowed = isAllowedHost(url, this.policy.allowHosts)
      agent = new https.Agent({keepAlive: true, maxSockets: 32, lookup: guardedLookup(this.policy, () => allowed)})
      this.agents.set(url.origin, agent)
    }
    return agent
  }
}

function failure(error: Error, signal: AbortSignal, durationMs: number): SendResult {
  if (signal.aborted) return {kind: 'timeout', durationMs, error: `no response within the timeout (${durationMs} ms)`}
  if (error instanceof SsrfBlockedError || (error as {code?: string}).code === 'ESSRFBLOCKED') return {kind: 'blocked', durationMs, error: error.message}
  const code = (error as {code?: string}).code
  return {kind: 'network', durationMs, error: code ? `${code}: ${error.message}` : error.message}
}
