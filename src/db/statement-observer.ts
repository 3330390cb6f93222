/** Which backend sent a statement. */
export type Dialect = 'mysql' | 'sqlite'

/** Told the text (placeholders, no values) of every SQL statement the project sends. */
type StatementObserver = (sql: string, dialect: Dialect) => void

// Installed only by the test suite (test/helpers/sql-recorder.ts: the sharding check reads what
// the whole suite sent; a test that counts what one request sent). In production there are none,
// and noting a statement is a loop over an empty set.
const observers = new Set<StatementObserver>()

/** Adds an observer of every statement this process sends; returns what removes it. */
export function observeStatements(observer: StatementObserver): () => void {
  observers.add(observer)
  return () => void observers.delete(observer)
}

/** Reports one statement to the observers. Every path that sends SQL calls it. */
export function noteStatement(sql: string, dialect: Dialect): void {
  for (const observer of observers) observer(sql, dialect)
}
