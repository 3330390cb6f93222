import {setTimeout as delay} from 'node:timers/promises'

import pRetry, {AbortError} from 'p-retry'

import type {LeadList} from '../leads/leads-service.js'
import type {BulkResponse} from '../leads/lead-view.js'
import {AppError, type ErrorType} from '../shared/errors.js'
import {baseUrlFix, type ClientSettings, requireClientSettings, type SettingSource} from './client-settings.js'

export interface ClientOptions {
  baseUrl: string
  token: string
  customerId: string
  /** Where baseUrl came from, named in the hint when it cannot be reached (default: LEADS_BASE_URL). */
  baseUrlFrom?: SettingSource
  /** Retries of network errors, 5xx and in-progress 409s; 429s wait for Retry-After and do not use these up. */
  retries?: number
  minRetryDelayMs?: number
  /** Stops the client: a request on the wire, and a wait (a 429's Retry-After, a backoff), end at once with an AbortError. */
  signal?: AbortSignal
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
  /** Called before every wait: a 429's Retry-After, or the backoff before retrying a failure. */
  onWait?: (wait: ApiWait) => void
}

/** A pause of the client, for a countdown in the progress views. */
export interface ApiWait {
  reason: 'rate limited' | 'retrying'
  waitMs: number
  /** What failed, for a retry (`cannot reach …`, `GET /… answered 503`). */
  cause: string
}

/** The RateLimit-* headers of a response; null when the response had none. */
export interface RateLimitState {
  limit: number
  remaining: number
  resetSeconds: number
}

interface ApiResult<T> {
  body: T
  rateLimit: RateLimitState | null
}

/** A response of the API that is an error; carries the envelope's type and status. */
export class ApiRequestError extends AppError {
  constructor(
    type: ErrorType,
    status: number,
    message: string,
    readonly param?: string,
  ) {
    super(type, status, message, hintFor(status))
  }
}

class RetryableError extends Error {
  constructor(
    message: string,
    readonly waitMs = 0,
  ) {
    super(message)
  }
}

const MAX_RATE_LIMIT_WAITS = 100
/** Retries of a base URL that has never answered: about 1.5 s with the default delays. */
const UNREACHED_RETRIES = 2

/**
 * The typed client of the public API, used by `leads pull` and `leads push`: the one place that
 * knows paths, headers, the error envelope and the RateLimit headers. Network errors, 5xx and a
 * 409 for a key whose first request is still running are retried with backoff, 429 after its
 * Retry-After; other 4xx fail at once.
 */
export class LeadsApiClient {
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  /** Until the API has answered once, an unreachable address is most likely a wrong URL or a stopped daemon: fail fast. */
  private reached = false

  constructor(private readonly options: ClientOptions) {
    this.sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, {signal}))
  }

  listLeads(query: Record<string, string>): Promise<ApiResult<LeadList>> {
    return this.request<LeadList>('GET', `/api/agents/crm/leads?${new URLSearchParams(query)}`)
  }

  bulkCreate(body: unknown, idempotencyKey: string): Promise<ApiResult<BulkResponse>> {
    return this.request<BulkResponse>('POST', '/api/agents/crm/leads/bulk', body, idempotencyKey)
  }

  private async request<T>(method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<ApiResult<T>> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      'x-customer-id': this.options.customerId,
      accept: 'application/json',
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
    const payload = body === undefined ? undefined : JSON.stringify(body)
    let rateLimitWaits = 0

    return pRetry(
      async () => {
        let response: Response
        try {
          response = await fetch(this.options.baseUrl + path, {method, headers, body: payload, signal: this.options.signal})
        } catch (error) {
          if (this.options.signal?.aborted) throw new AbortError(abortedBy(this.options.signal))
          throw new RetryableError(`cannot reach ${this.options.baseUrl}: ${causeOf(error)}`)
        }
        this.reached = true
        const text = await response.text()
        const rateLimit = readRateLimit(response.headers)
        if (response.ok) return {body: JSON.parse(text) as T, rateLimit}
        const envelope = parseEnvelope(text)
        const message = envelope?.message ?? `HTTP ${response.status}`
        if (response.status === 429) {
          const waitMs = retryAfterMs(response.headers) ?? 1000
          throw new RetryableError(message, waitMs)
        }
        if (response.status >= 500) throw new RetryableError(`${method} ${path.split('?')[0]} answered ${response.status}: ${message}`)
        // A 409 with Retry-After: the first request with this Idempotency-Key (one whose answer was
        // lost, say) is still running. The same request gets its answer once it ends; a 409
        // without Retry-After (the key used with another body) never will.
        if (response.status === 409 && idempotencyKey !== undefined && response.headers.has('retry-after')) {
          throw new RetryableError(`${method} ${path.split('?')[0]} answered 409: ${message}`)
        }
        throw new AbortError(new ApiRequestError(envelope?.type ?? 'invalid_request_error', response.status, message, envelope?.param))
      },
      {
        retries: this.options.retries ?? 5,
        minTimeout: 0,
        maxTimeout: 0,
        onFailedAttempt: async ({error, attemptNumber}) => {
          if (!this.reached && error instanceof RetryableError && attemptNumber > UNREACHED_RETRIES) {
            throw new AppError(
              'api_error',
              503,
              error.message,
              `is the daemon running at ${this.options.baseUrl}? Start it with \`leads daemon\`, or ${baseUrlFix(this.options.baseUrlFrom)}`,
            )
          }
          if (!(error instanceof RetryableError)) return
          // The client waits itself (p-retry's own delay is 0) so the views can count every wait down.
          const rateLimited = error.waitMs > 0
          if (rateLimited) rateLimitWaits += 1
          const waitMs = rateLimited ? error.waitMs : backoffMs(this.options.minRetryDelayMs ?? 500, attemptNumber)
          this.options.onWait?.({reason: rateLimited ? 'rate limited' : 'retrying', waitMs, cause: error.message})
          await this.sleep(waitMs, this.options.signal)
        },
        signal: this.options.signal,
        // Waiting out a rate limit is expected work, not a failure: it uses no retry.
        shouldConsumeRetry: ({error}) => !(error instanceof RetryableError && error.waitMs > 0 && rateLimitWaits < MAX_RATE_LIMIT_WAITS),
      },
    )
  }
}

/** Why a stopped client stopped: the signal's reason, an AbortError unless the caller gave another. */
function abortedBy(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('The client was stopped', 'AbortError')
}

/** Exponential backoff with jitter, capped at 30 s: base, 2 × base, 4 × base … times 1 to 2. */
function backoffMs(baseMs: number, attemptNumber: number): number {
  return Math.round(Math.min(30_000, baseMs * 2 ** (attemptNumber - 1)) * (1 + Math.random()))
}

function readRateLimit(headers: Headers): RateLimitState | null {
  const limit = headers.get('ratelimit-limit')
  const remaining = headers.get('ratelimit-remaining')
  const reset = headers.get('ratelimit-reset')
  if (limit === null || remaining === null || reset === null) return null
  return {limit: Number(limit), remaining: Number(remaining), resetSeconds: Number(reset)}
}

function retryAfterMs(headers: Headers): number | null {
  const value = headers.get('retry-after')
  if (value === null) return null
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now())
}

function parseEnvelope(text: string): {type: ErrorType; message: string; param?: string} | null {
  try {
    const parsed = JSON.parse(text) as {error?: {type?: ErrorType; message?: string; param?: string}}
    if (parsed.error?.type && parsed.error.message) return {type: parsed.error.type, message: parsed.error.message, param: parsed.error.param}
  } catch {
    // not JSON: fall back to the status line
  }
  return null
}

function causeOf(error: unknown): string {
  const cause = (error as {cause?: {code?: string; message?: string}}).cause
  return cause?.code ?? cause?.message ?? (error as Error).message
}

function hintFor(status: number): string | undefined {
  if (status === 401) return 'check LEADS_API_TOKEN; ask the operator for a key if it was rotated or revoked'
  if (status === 403) return 'check LEADS_CUSTOMER_ID and that the key has the scope this command needs'
  return undefined
}

/** The API client of the client commands, from the settings in force (client-settings.ts stays free of this module: the operator commands load it). */
export function clientFromSettings(settings: ClientSettings, extra: Partial<ClientOptions> = {}): LeadsApiClient {
  const {baseUrl, apiToken, customerId} = requireClientSettings(settings)
  return new LeadsApiClient({baseUrl, token: apiToken, customerId, baseUrlFrom: settings.baseUrlFrom, ...extra})
}
