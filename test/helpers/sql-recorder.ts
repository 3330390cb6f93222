import fs from 'node:fs'

import {type Dialect, observeStatements} from '../../src/db/statement-observer.js'

/**
 * The file the suite's processes append the statements they send to. Not a LEADS_ variable:
 * runCliProcess hands children the test process's environment without those.
 */
export const SQL_RECORD_VARIABLE = 'TEST_SQL_RECORD_FILE'

/** One distinct statement as recorded: its backend and normalised text. */
export interface RecordedStatement {
  dialect: Dialect
  sql: string
}

// Bulk inserts are the only long texts; below this length a text is remembered as sent, so a
// statement seen again costs one Set lookup instead of a normalisation.
const REMEMBERED_LENGTH = 4000

/**
 * Records every distinct statement this process sends, normalised, one JSON line each, appended
 * to `file` at once (a daemon killed by its test has written what it sent).
 */
export function recordStatements(file: string): void {
  const sent = new Set<string>()
  const recorded = new Set<string>()
  observeStatements((sql, dialect) => {
    const seen = `${dialect} ${sql}`
    if (sent.has(seen)) return
    if (sql.length < REMEMBERED_LENGTH) sent.add(seen)
    const statement: RecordedStatement = {dialect, sql: normalizeSql(sql)}
    const line = JSON.stringify(statement)
    if (recorded.has(line)) return
    recorded.add(line)
    fs.appendFileSync(file, line + '\n')
  })
}

/**
 * One text for every shape of a statement: whitespace collapsed, a multi-row VALUES list and an
 * IN list of placeholders written as one tuple or one placeholder and an ellipsis.
 */
export function normalizeSql(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/(\((?:\?, ?)*\?\))(?:, ?\1)+/g, '$1, …')
    .replace(/\bin \((?:\?, ?)+\?\)/gi, (match) => `${match.slice(0, 2)} (?, …)`)
}

/** Every distinct statement in a recording, as recorded by all the processes that wrote to it. */
export function readRecording(file: string): RecordedStatement[] {
  if (!fs.existsSync(file)) return []
  const lines = new Set(fs.readFileSync(file, 'utf8').split('\n').filter((line) => line !== ''))
  return [...lines].map((line) => JSON.parse(line) as RecordedStatement)
}
