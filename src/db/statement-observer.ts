/** Which backend sent a statement. */
export type Dialect = 'mysql' | 'sqlite'

/** Told the text (placeholders, no values) of every SQL statement the project sends. */
type StatementObserver = (sql: string, dialect: Dialect) => void

// One per process, set only by the test suite (test/helpers/sql-recorder.ts): the sharding check
// reads what the whole suite sent. Unset in production, where noting a statement is one null check.
let observer: StatementObserver | null = null

/** Installs (or with null removes) the process's statement observer. */
export function observeStatements(next: StatementObserver | null): void {
  observer = next
}

/** Reports one statement to the observer, if any. Every path that sends SQL calls it. */
export function noteStatement(sql: string, dialect: Dialect): void {
  observer?.(sql, dialect)
}
