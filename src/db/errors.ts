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
 * True when a locking read with NOWAIT found the row locked. MySQL 8 has its own code for it;
 * MariaDB reports a lock wait timeout, which a real wait only reaches after
 * innodb_lock_wait_timeout (at least 1 s), so a quick one is the NOWAIT refusal.
 */
export function isNowaitRefusal(error: unknown, elapsedMs: number): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_LOCK_NOWAIT' || (code === 'ER_LOCK_WAIT_TIMEOUT' && elapsedMs < 1000)
}

/** True when a guardStatement found an assumption broken (MySQL). */
export function isGuardRefusal(error: unknown): boolean {
  return (error as {code?: string}).code === 'ER_SUBQUERY_NO_1_ROW'
}
