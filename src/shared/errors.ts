/** The `type` values of the API's error envelope. */
export type ErrorType = 'authentication_error' | 'authorization_error' | 'invalid_request_error' | 'not_found_error' | 'rate_limit_error' | 'api_error'

/**
 * Base of every error the core throws on purpose. It carries what the HTTP envelope needs
 * (type and status) and a hint for the CLI; the daemon's error middleware and the CLI's base
 * command are the only places that turn it into output.
 */
export class AppError extends Error {
  constructor(
    readonly type: ErrorType,
    readonly status: number,
    message: string,
    readonly hint?: string,
  ) {
    super(message)
    this.name = new.target.name
  }
}

export class ValidationError extends AppError {
  constructor(
    message: string,
    /** The offending field or query parameter, echoed as `param` in the envelope. */
    readonly param?: string,
    hint?: string,
  ) {
    super('invalid_request_error', 400, message, hint)
  }
}

export class AuthenticationError extends AppError {
  constructor(message: string) {
    super('authentication_error', 401, message)
  }
}

export class AuthorizationError extends AppError {
  constructor(message: string) {
    super('authorization_error', 403, message)
  }
}

export class NotFoundError extends AppError {
  constructor(message: string, hint?: string) {
    super('not_found_error', 404, message, hint)
  }
}

export class ConflictError extends AppError {
  constructor(message: string, hint?: string) {
    super('invalid_request_error', 409, message, hint)
  }
}

/**
 * 409: the first request with this Idempotency-Key is still running. Unlike a key reused with
 * another body, the same request succeeds later, so the answer carries Retry-After: a client can
 * tell the two apart without reading the message.
 */
export class InProgressError extends ConflictError {
  /** Seconds the client should wait before retrying, sent as Retry-After. */
  readonly retryAfterSeconds = 1

  constructor(message: string) {
    super(message)
  }
}

/** A bad setting found while loading configuration; names the variable. */
export class ConfigError extends AppError {
  constructor(
    readonly variable: string,
    detail: string,
    hint = 'fix the variable in the environment (see README, Configuration)',
  ) {
    super('api_error', 500, `${variable} ${detail}`, hint)
  }
}

/** The spec's 429: a fixed sentence; Retry-After says how long to wait. */
export class RateLimitError extends AppError {
  constructor() {
    super('rate_limit_error', 429, 'Rate limit exceeded. Retry later, after the number of seconds in Retry-After.')
  }
}

/** 503: the service cannot serve this request now (its database is unreachable or refuses); Retry-After says when to try again. */
export class UnavailableError extends AppError {
  constructor(
    message: string,
    /** Seconds the client should wait before retrying, sent as Retry-After. */
    readonly retryAfterSeconds: number,
    hint = 'retry in a few seconds; the database behind the service is unavailable',
  ) {
    super('api_error', 503, message, hint)
  }
}
