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
 * True when a locking read found the row locked: refused at once by NOWAIT (MySQL 8 has its own
 * code; MariaDB reports a lock wait timeout), or after a real wait that ran out. For a keyed write
 * both mean the same: another request holds the key. No clock tells them apart: the time an
 * attempt took includes waits in the create queue and for a pooled connection.
 */
export function isLockRefusal(error: unknown): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_LOCK_NOWAIT' || code === 'ER_LOCK_WAIT_TIMEOUT'
}

/** What a guardStatement fails with on SQLite, where it runs as its probes (see runEach). */
export class GuardRefusal extends Error {
  readonly code = 'GUARD_REFUSED'
  constructor() {
    super('an assumption the write was built on no longer holds')
  }
}

/** True when a guardStatement found an assumption broken. */
export function isGuardRefusal(error: unknown): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_SUBQUERY_NO_1_ROW' || code === 'GUARD_REFUSED'
}
