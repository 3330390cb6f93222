/** True for a primary-key or unique-index violation on either backend. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as {code?: string}).code
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/** True when InnoDB chose this transaction as a deadlock victim; the transaction can simply be retried. */
export function isDeadlock(error: unknown): boolean {
  return (error as {code?: string}).code === 'ER_LOCK_DEADLOCK'
}
