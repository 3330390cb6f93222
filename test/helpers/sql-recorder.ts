import {createHash} from 'node:crypto'
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

// Bulk inserts are the only long texts (100 kB for 4,000 rows, 5 ms to normalise): a text seen
// before is known by itself when short and by its digest (0.1 ms) when long, so only the first
// sending of each costs a normalisation.
const LONG_TEXT = 4000

/**
 * Records every distinct statement this process sends, normalised, one JSON line each, appended
 * to `file` at once (a daemon killed by its test has written what it sent).
 */
export function recordStatements(file: string): void {
  const sent = new Set<string>()
  const recorded = new Set<string>()
  observeStatements((sql, dialect) => {
    const seen = `${dialect} ${sql.length < LONG_TEXT ? sql : createHash('sha1').update(sql).digest('base64')}`
    if (sent.has(seen)) return
    sent.add(seen)
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
  const lines = new Set(
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== ''),
  )
  return [...lines].map((line) => JSON.parse(line) as RecordedStatement)
}
