import {UnavailableError} from '../shared/errors.js'

/** True for a primary-key or unique-index violation on either backend. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/** True when InnoDB chose this transaction as a deadlock victim; the transaction can simply be retried. */
export function isDeadlock(error: unknown): boolean {
  return (error as {code?: string}).code === 'ER_LOCK_DEADLOCK'
}

/**
 * True when the database refused a statement for a conflict with another transaction: a deadlock
 * victim that outlasted the retries, or a lock wait that ran out. On Galera a transaction aborted
 * for a replicated write is a deadlock victim too, and the abort can surface on the session's next
 * statement, a plain read included. The statement did nothing; the request can be sent again.
 */
export function isConflictRefusal(error: unknown): boolean {
  return isDeadlock(error) || (error as {code?: string}).code === 'ER_LOCK_WAIT_TIMEOUT'
}

/**
 * True when a statement found a row locked: refused at once (a NOWAIT read, for which MySQL 8 has
 * its own code and MariaDB reports a lock wait timeout, or an insert under no lock wait), or after
 * a real wait that ran out. On a key claim (keyClaim in statements.ts) both mean the same: another
 * request holds the key. No clock tells them apart: the time an attempt took includes waits in the
 * create queue and for a pooled connection.
 */
export function isLockRefusal(error: unknown): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_LOCK_NOWAIT' || code === 'ER_LOCK_WAIT_TIMEOUT'
}

/**
 * What a guardStatement fails with on SQLite, where it runs as its probes (see runEach), and a
 * registration (see registration in statements.ts) that found its key taken, on either backend.
 */
export class GuardRefusal extends Error {
  readonly code = 'GUARD_REFUSED'
  constructor(cause?: unknown) {
    super('an assumption the write was built on no longer holds', {cause})
  }
}

/**
 * What a statement that claims Idempotency-Keys (see keyClaim in statements.ts) fails with when a
 * key is taken: stored already (a unique-key violation), or held by a request still in its
 * transaction (a lock refusal). The same errors from any other statement are not about the key.
 */
export class KeyClaimRefusal extends Error {
  readonly code = 'KEY_CLAIM_REFUSED'
  constructor(
    readonly key: 'stored' | 'held',
    cause: unknown,
  ) {
    super(key === 'stored' ? 'an Idempotency-Key claimed is stored already' : 'an Idempotency-Key claimed is held by a request in flight', {cause})
  }
}

/** True when a guardStatement found an assumption broken. */
export function isGuardRefusal(error: unknown): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_SUBQUERY_NO_1_ROW' || code === 'GUARD_REFUSED'
}

/** mysql2's names for a connection that broke under a statement, and MariaDB's for one it ended. */
const LOST_CONNECTION_CODES = new Set(['PROTOCOL_CONNECTION_LOST', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ER_SERVER_SHUTDOWN', 'ER_CONNECTION_KILLED'])
/** MariaDB's ER_CONNECTION_KILLED (KILL CONNECTION, or the server going away), which mysql2 does not name. */
const ER_CONNECTION_KILLED = 1927

/**
 * True when the connection a statement went out on broke (the server died, restarted or killed
 * the connection, or a balancer in front of it closed it): the statement may or may not have run.
 */
export function isConnectionLost(error: unknown): boolean {
  const {code, errno, fatal} = error as {code?: string; errno?: number; fatal?: boolean}
  if (code !== undefined && LOST_CONNECTION_CODES.has(code)) return true
  // mysql2 refuses to send on a connection it knows closed, fatal and without a code.
  return errno === ER_CONNECTION_KILLED || (fatal === true && code === undefined)
}

/** True when mysql2 refused to send the statement at all: its connection had already closed. */
export function wasNeverSent(error: unknown): boolean {
  return (error as {fatal?: boolean; code?: string}).fatal === true && /closed state/.test((error as Error).message ?? '')
}

/**
 * True when a Galera node refuses statements because it is not part of the primary component
 * (it lost quorum, or is still joining): MariaDB's "WSREP has not yet prepared node for
 * application use", ER_UNKNOWN_COM_ERROR.
 */
export function isClusterRefusal(error: unknown): boolean {
  return (error as {code?: string}).code === 'ER_UNKNOWN_COM_ERROR'
}

/** Codes of a database that cannot be reached or will not take connections now. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOTFOUND', 'ER_CON_COUNT_ERROR', 'ER_TOO_MANY_USER_CONNECTIONS'])

/**
 * True when the database cannot serve now, through no fault of the request: a lost connection,
 * one that cannot be opened, no connection free in the pool in time, or a Galera node without
 * quorum. The request can be tried again a little later.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof LostBeforeCommit || isConnectionLost(error) || isClusterRefusal(error)) return true
  const {code, name} = error as {code?: string; name?: string}
  return (code !== undefined && UNREACHABLE_CODES.has(code)) || name === 'KnexTimeoutError'
}

/** Why the database does not serve, for /readyz and the logs: a reason an operator can act on. */
export function databaseFailureReason(error: unknown): string {
  const {code, errno} = error as {code?: string; errno?: number}
  const name = code ?? (errno === undefined ? 'no answer' : `error ${errno}`)
  if (isClusterRefusal(error)) return `database refuses statements (${name}): the Galera node is not in the primary component (no quorum, or still joining)`
  if (isDatabaseUnavailable(error)) return `database unreachable: ${name}`
  return `database failed: ${name}`
}

/**
 * A write transaction whose connection broke before its COMMIT went out: the database rolled it
 * back, so it can run again as a whole on another connection (retryingUndone). Keeps the
 * driver's code and errno.
 */
export class LostBeforeCommit extends Error {
  readonly code: string | undefined
  readonly errno: number | undefined
  constructor(override readonly cause: unknown) {
    super('the database connection broke before the transaction committed')
    this.name = 'LostBeforeCommit'
    this.code = (cause as {code?: string}).code
    this.errno = (cause as {errno?: number}).errno
  }
}

/** Seconds a client is asked to wait before retrying a write the database could not take. */
const RETRY_AFTER_SECONDS = 2

/**
 * A write whose connection broke after its COMMIT went out: it may have committed or not, and
 * only a retry under the same Idempotency-Key can tell (replayed when stored, written once when
 * not). Never retried here: without the key a retry could store the lead twice.
 */
export class WriteOutcomeUnknown extends UnavailableError {
  constructor(override readonly cause: unknown) {
    super(
      'The database connection was lost while the write was committing, so whether it was stored is not known. Retry with the same Idempotency-Key: a stored write is replayed, one that was not is written once.',
      RETRY_AFTER_SECONDS,
    )
  }
}

/** The 503 for a request the database refused for a conflict with concurrent ones (isConflictRefusal). */
export class DatabaseConflict extends UnavailableError {
  constructor() {
    super(
      'The database refused the request for a conflict with concurrent requests. Retry after the seconds in Retry-After.',
      RETRY_AFTER_SECONDS,
      'retry in a few seconds; concurrent requests held the same rows',
    )
  }
}

/** The 503 for a database that cannot serve now (isDatabaseUnavailable). */
export class DatabaseUnavailable extends UnavailableError {
  constructor() {
    super('The database is unavailable; nothing was written. Retry after the seconds in Retry-After.', RETRY_AFTER_SECONDS)
  }
}
