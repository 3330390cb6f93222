import {createRequire} from 'node:module'

import type {Knex} from 'knex'

/** A better-sqlite3 prepared statement, as far as a query uses it. */
interface Prepared {
  readonly reader: boolean
  all(bindings: unknown[]): unknown[]
  run(bindings: unknown[]): {lastInsertRowid: number | bigint; changes: number}
}

interface Connection {
  prepare(sql: string): Prepared
}

interface Query {
  sql: string
  bindings?: unknown[]
  options?: {safeIntegers?: boolean}
  response?: unknown
  context?: {lastID: number | bigint; changes: number}
}

/**
 * Statements kept per connection. A daemon sends a few hundred distinct texts; a text whose
 * number of bindings varies (an IN list, a multi-row insert) is kept too, and the oldest kept
 * goes first once there are more.
 */
const STATEMENTS_KEPT = 500

/** Each connection's kept statements, in the order of last use. Keyed by connection, not client: a transaction's client is a copy. */
const kept = new WeakMap<Connection, Map<string, Prepared>>()

const BetterSqlite3Client = createRequire(import.meta.url)('knex/lib/dialects/better-sqlite3/index.js') as new (
  config: Knex.Config,
) => Knex.Client & {_formatBindings(bindings: unknown[] | undefined): unknown[]}

/**
 * knex's better-sqlite3 client, keeping each connection's prepared statements by their text.
 * knex prepares every query afresh, and compiling is a large part of a short statement's cost
 * on SQLite; a write sends the same dozen texts every time. SQLite prepares a kept statement
 * again by itself when the schema changes under it.
 */
export class CachingSqliteClient extends BetterSqlite3Client {
  async _query(connection: Connection, query: Query): Promise<Query> {
    if (!query.sql) throw new Error('The query is empty')
    if (!connection) throw new Error('No connection provided')
    // A query that asks for its own integer mode gets a statement of its own: the mode is the statement's.
    const ownMode = query.options?.safeIntegers
    const statement = ownMode === undefined ? prepared(connection, query.sql) : connection.prepare(query.sql)
    if (ownMode !== undefined) (statement as Prepared & {safeIntegers(on: boolean): void}).safeIntegers(ownMode)
    const bindings = this._formatBindings(query.bindings)
    if (statement.reader) {
      query.response = statement.all(bindings)
      return query
    }
    const response = statement.run(bindings)
    query.response = response
    query.context = {lastID: response.lastInsertRowid, changes: response.changes}
    return query
  }
}

/** The connection's statement for the text, prepared once. */
function prepared(connection: Connection, sql: string): Prepared {
  let statements = kept.get(connection)
  if (!statements) kept.set(connection, (statements = new Map()))
  let statement = statements.get(sql)
  if (statement) {
    // Kept in the order of last use: the first is the one to drop.
    statements.delete(sql)
  } else {
    statement = connection.prepare(sql)
    if (statements.size >= STATEMENTS_KEPT) statements.delete(statements.keys().next().value!)
  }
  statements.set(sql, statement)
  return statement
}
