/**
 * Which statement of a batch a database error came from, as a log may record it: its verb and
 * table ("INSERT INTO lead_search_words"), never its text, which can carry values written out.
 * A batch sends a dozen statements in one round trip, and the driver's error names none of them.
 */

/** The verb and table of a statement, or its first word when it names no table. */
export function statementKind(sql: string): string {
  // MariaDB's per-statement settings wrap the statement they apply to.
  const statement = sql.replace(/^\s*\(*\s*SET STATEMENT .*? FOR\s+/is, '').replace(/^[\s(]+/, '')
  const match = /^(INSERT\s+(?:IGNORE\s+)?INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+`?(\w+)`?/i.exec(statement)
  if (match) return `${match[1]!.toUpperCase().replace(/\s+/g, ' ')} ${match[2]}`
  // A FROM after a quote could be a value's text: no table is named then.
  const read = /^SELECT\b[^'"]*?\bFROM\s+`?(\w+)`?/i.exec(statement)
  if (read) return `SELECT ${read[1]}`
  return (/^\w+(?:\s+TRANSACTION)?/i.exec(statement)?.[0] ?? 'statement').toUpperCase()
}

/** Records on `error` the kind of the statement it came from (see statementKind), unless it names one already. */
export function markFailedStatement(error: unknown, sql: string): void {
  if (error !== null && typeof error === 'object' && !('failedStatement' in error)) {
    Object.defineProperty(error, 'failedStatement', {value: statementKind(sql), enumerable: false})
  }
}

/** The kind of statement an error came from, when markFailedStatement recorded it (on it or on its cause). */
export function failedStatementOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 4; depth++) {
    const kind = (current as {failedStatement?: unknown}).failedStatement
    if (typeof kind === 'string') return kind
    current = (current as {cause?: unknown}).cause
  }
  return undefined
}
