import type {Knex} from 'knex'

import {type Db, readServerFacts, type ServerFlavor, serverFlavor} from './knex.js'
import {noteStatement} from './statement-observer.js'

/**
 * A time limit per read statement, so one broad request cannot hold a connection (and on SQLite,
 * the daemon's only thread) for long. MariaDB gets `SET STATEMENT max_statement_time=… FOR`, MySQL 8
 * the `MAX_EXECUTION_TIME` hint; both stop the statement on the server and free the connection.
 * SQLite has no interrupt in better-sqlite3, so the statement carries a check (timeCheck) that
 * SQLite evaluates per row it reads and that throws once the limit has passed, which aborts the
 * statement. SQLite can only stop at such a row: work between rows (building an automatic index,
 * a final sort) runs to its end.
 */

/** A statement stopped at its time limit. */
export class StatementTimeout extends Error {
  readonly code = 'STATEMENT_TIMEOUT'
  constructor(readonly limitMs: number) {
    super(`statement stopped after its limit of ${limitMs} ms`)
  }
}

/** MariaDB's ER_STATEMENT_TIMEOUT and MySQL's ER_QUERY_TIMEOUT. */
const TIMEOUT_ERRNOS = new Set([1969, 3024])

/** Which server a MySQL handle talks to, read at start (readServerFacts) or, for a handle opened otherwise, now. */
async function flavorOf(db: Db): Promise<ServerFlavor> {
  if (!serverFlavor(db)) await readServerFacts(db)
  return serverFlavor(db)!
}

/** Runs a read query under a time limit; throws StatementTimeout when the limit stops it. */
export async function readWithin<Row>(db: Db, query: Knex.QueryBuilder, limitMs: number): Promise<Row[]> {
  const {sql, bindings} = query.toSQL().toNative()
  if (db.client.config.client !== 'mysql2') return readSqliteWithin<Row>(db, sql, bindings, limitMs)
  const flavor = await flavorOf(db)
  const limited =
    flavor === 'mariadb'
      ? `SET STATEMENT max_statement_time=${(limitMs / 1000).toFixed(3)} FOR ${sql}`
      : sql.replace(/^select\b/i, `select /*+ MAX_EXECUTION_TIME(${Math.round(limitMs)}) */`)
  try {
    const [rows] = (await db.raw(limited, bindings as Knex.RawBinding[])) as [Row[]]
    return rows
  } catch (error) {
    if (TIMEOUT_ERRNOS.has((error as {errno?: number}).errno ?? 0)) throw new StatementTimeout(limitMs)
    throw error
  }
}

/** The name of the SQLite function timeCheck calls. */
const CHECK_FUNCTION = 'leads_within_time_limit'

interface SqliteConnection {
  function(name: string, options: {deterministic: boolean}, fn: (...args: unknown[]) => unknown): unknown
  prepare(sql: string): {all(...bindings: unknown[]): unknown[]}
}

/** The deadline of the statement each SQLite connection is running under readWithin (0: none). */
const deadlines = new WeakMap<object, {at: number; limitMs: number; rows: number}>()

/** Registers timeCheck's function on a new SQLite connection. */
export function installTimeCheck(conn: SqliteConnection): void {
  const deadline = {at: 0, limitMs: 0, rows: 0}
  deadlines.set(conn, deadline)
  // One argument (the row's rowid): better-sqlite3 takes the function's arity from its length.
  conn.function(CHECK_FUNCTION, {deterministic: false}, (_rowid: unknown) => {
    // The clock is read every 64 rows: reading it costs about as much as reading a row.
    if (deadline.at !== 0 && (++deadline.rows & 63) === 0 && Date.now() > deadline.at) throw new StatementTimeout(deadline.limitMs)
    return 1
  })
}

/**
 * Makes SQLite check the time limit on each row of `table` the statement reads (nothing on MySQL,
 * whose server keeps the limit). The rowid is in every index, so an index-only plan stays one; a
 * WITHOUT ROWID table has none and names a column of its primary key instead.
 */
export function timeCheck(db: Db, query: Knex.QueryBuilder, table: string, column = 'rowid'): Knex.QueryBuilder {
  return db.client.config.client === 'mysql2' ? query : query.whereRaw(`${CHECK_FUNCTION}(${table}.${column}) = 1`)
}

/**
 * better-sqlite3 runs a statement synchronously: the deadline is set just before and cleared just
 * after, with nothing else able to run on the connection in between.
 */
async function readSqliteWithin<Row>(db: Db, sql: string, bindings: readonly unknown[], limitMs: number): Promise<Row[]> {
  const conn = (await db.client.acquireConnection()) as SqliteConnection
  try {
    noteStatement(sql, 'sqlite')
    const deadline = deadlines.get(conn)!
    Object.assign(deadline, {at: Date.now() + limitMs, limitMs, rows: 0})
    try {
      return conn.prepare(sql).all(...bindings.map(sqliteValue)) as Row[]
    } finally {
      deadline.at = 0
    }
  } finally {
    await db.client.releaseConnection(conn)
  }
}

/** A binding as knex's better-sqlite3 client sends it. */
function sqliteValue(value: unknown): unknown {
  if (value instanceof Date) return value.valueOf()
  if (typeof value === 'boolean') return Number(value)
  return value
}
