import type {Knex} from 'knex'

import {GuardRefusal, isLockRefusal, isUniqueViolation, KeyClaimRefusal} from './errors.js'
import {markFailedStatement} from './failed-statement.js'
import {rowsPerInsert, statementBudget} from './knex.js'

/**
 * One SQL statement with its bindings, built but not yet sent. Write paths collect statements and
 * send several in one round trip (see write-transaction.ts): every round trip costs the daemon
 * and MariaDB a wake-up and the protocol's work on both sides.
 */
export interface Statement {
  readonly sql: string
  readonly bindings: readonly Knex.Value[]
}

/** What a statement returned: its rows (a read), or how many rows it changed (a write). */
export interface StatementResult {
  readonly rows: Array<Record<string, unknown>>
  readonly affectedRows: number
}

/**
 * A multi-row INSERT written out directly: knex's builder costs more to compile a bulk request's
 * rows than the database takes to insert them. Every row must have every column of the first. `conflict` makes it
 * an upsert that overwrites `update` on a duplicate key (MySQL and SQLite alike).
 */
export function insertRows<Row extends object>(
  db: Knex,
  table: string,
  rows: readonly Row[],
  conflict?: {keys: readonly string[]; update: readonly string[]},
): Statement {
  const columns = Object.keys(rows[0]!)
  const tuple = `(${columns.map(() => '?').join(', ')})`
  const bindings: Knex.Value[] = []
  for (const row of rows) for (const column of columns) bindings.push((row as Record<string, Knex.Value>)[column] ?? null)
  let sql = `INSERT INTO ${quoted(table)} (${columns.map(quoted).join(', ')}) VALUES ${rows.map(() => tuple).join(', ')}`
  if (conflict && db.client.config.client === 'mysql2')
    sql += ` ON DUPLICATE KEY UPDATE ${conflict.update.map((column) => `${quoted(column)} = VALUES(${quoted(column)})`).join(', ')}`
  else if (conflict)
    sql += ` ON CONFLICT (${conflict.keys.map(quoted).join(', ')}) DO UPDATE SET ${conflict.update.map((column) => `${quoted(column)} = excluded.${quoted(column)}`).join(', ')}`
  return {sql, bindings}
}

/** Room for a multi-row INSERT's text around its tuples (names, ON DUPLICATE KEY UPDATE …): under 1 KB for the widest. */
const STATEMENT_TEXT = 4096

/**
 * Multi-row INSERTs of `rows` (as insertRows), as few as fit: each of at most rowsPerInsert rows
 * and statementBudget bytes as sent, so a write of large values never exceeds the server's packet.
 */
export function insertChunks<Row extends object>(
  db: Knex,
  table: string,
  rows: readonly Row[],
  conflict?: {keys: readonly string[]; update: readonly string[]},
): Statement[] {
  const maxRows = rowsPerInsert(db)
  const maxBytes = statementBudget(db)
  const columns = rows.length === 0 ? [] : (Object.keys(rows[0]!) as Array<keyof Row>)
  const statements: Statement[] = []
  const chunk = (from: number, to: number, bytes: number) => {
    const statement = insertRows(db, table, rows.slice(from, to), conflict)
    // Measured here, row by row, so the batch that sends it need not walk its values again.
    if (maxBytes !== Infinity) measured.set(statement, STATEMENT_TEXT + bytes)
    statements.push(statement)
  }
  let start = 0
  let bytes = 0
  for (let index = 0; index < rows.length; index++) {
    const size = maxBytes === Infinity ? 0 : rowBytes(rows[index]!, columns)
    if (index > start && (index - start >= maxRows || STATEMENT_TEXT + bytes + size > maxBytes)) {
      chunk(start, index, bytes)
      start = index
      bytes = 0
    }
    bytes += size
  }
  if (start < rows.length) chunk(start, rows.length, bytes)
  return statements
}

/**
 * A row's tuple in a multi-row INSERT, at least as statementBytes counts it: each value with its
 * placeholder and separator, the parentheses and the separator after.
 */
function rowBytes<Row extends object>(row: Row, columns: ReadonlyArray<keyof Row>): number {
  let bytes = 4
  for (const column of columns) bytes += valueBytes(row[column] as Knex.Value) + 3
  return bytes
}

/**
 * At least the bytes a statement takes as MySQL receives it, values written into the text (mysql2
 * formats them in the client): each string counted as if every character were escaped (a quote
 * or backslash is sent as two), a buffer as hex, a number at its longest.
 */
export function statementBytes(statement: Statement): number {
  const known = measured.get(statement)
  if (known !== undefined) return known
  let bytes = Buffer.byteLength(statement.sql)
  for (const value of statement.bindings) bytes += valueBytes(value)
  return bytes
}

/**
 * A statement written out in full (its values in the text, no bindings), measured as it is made:
 * measuring flattens the text a formatter built piece by piece, a copy of the whole statement
 * that would otherwise be made as it is sent.
 */
export function writtenOut(sql: string): Statement {
  const statement = {sql, bindings: []}
  measured.set(statement, Buffer.byteLength(sql))
  return statement
}

/** The bytes of the statements insertChunks built, as statementBytes counts them, and of those writtenOut made. */
const measured = new WeakMap<Statement, number>()

/** Strings shorter than this are bounded by their length alone: counting their bytes cost more than the rest of the estimate. */
const SHORT_STRING = 256

/** At most the bytes a string's text takes in a statement, escaped (a quote or backslash is sent as two), without its quotes. */
export function escapedBytes(text: string): number {
  return 2 * Buffer.byteLength(text)
}

function valueBytes(value: Knex.Value): number {
  if (value === null || value === undefined) return 4
  // Up to 3 bytes a UTF-16 unit, each doubled by escaping; measured only when long, where the bound is loose enough to matter.
  if (typeof value === 'string') return (value.length < SHORT_STRING ? 6 * value.length : escapedBytes(value)) + 2
  if (Buffer.isBuffer(value)) return 2 * value.length + 3
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return 24
  if (value instanceof Date) return 32
  return 2 * Buffer.byteLength(JSON.stringify(value)) + 2
}

/** An identifier in backticks, which MySQL and SQLite both read as a quoted name. */
function quoted(name: string): string {
  return `\`${name}\``
}

/** The statement a query builder (or raw query) would send. */
export function compile(query: Knex.QueryBuilder | Knex.Raw): Statement {
  const {sql, bindings} = query.toSQL().toNative()
  return {sql, bindings}
}

/** Runs statements one at a time on a connection or transaction (SQLite, or MySQL outside a batch). */
export async function runEach(trx: Knex | Knex.Transaction, statements: readonly Statement[]): Promise<StatementResult[]> {
  const results: StatementResult[] = []
  for (const statement of statements) {
    if ('probes' in statement) results.push(await runGuard(trx, statement as GuardStatement))
    else
      results.push(resultOf(await trx.raw(statement.sql, [...statement.bindings]).catch((error: unknown) => Promise.reject(refusalOf(statement, error))), trx))
  }
  return results
}

/**
 * A guard run as its probes, one by one: SQLite takes a scalar subquery's first row without
 * complaint, so the statement itself would never fail.
 */
async function runGuard(trx: Knex | Knex.Transaction, guard: GuardStatement): Promise<StatementResult> {
  for (const probe of guard.probes) {
    if (resultOf(await trx.raw(probe.sql, [...probe.bindings]), trx).rows.length > 0) throw new GuardRefusal()
  }
  return {rows: [{assumptions_hold: 1}], affectedRows: 0}
}

/**
 * Normalises a driver's answer to one statement: mysql2 gives rows or a ResultSetHeader (inside
 * knex's [result, fields] for a raw query), better-sqlite3 gives rows or {changes}.
 */
function resultOf(raw: unknown, db?: Knex): StatementResult {
  const answer = db && db.client.config.client === 'mysql2' && Array.isArray(raw) ? raw[0] : raw
  return driverResult(answer)
}

/** One statement's answer straight from the driver. */
export function driverResult(answer: unknown): StatementResult {
  if (Array.isArray(answer)) return {rows: answer as Array<Record<string, unknown>>, affectedRows: 0}
  const header = answer as {affectedRows?: number; changes?: number} | undefined
  return {rows: [], affectedRows: Number(header?.affectedRows ?? header?.changes ?? 0)}
}

/** A guardStatement: its probes, which SQLite runs one by one. */
interface GuardStatement extends Statement {
  readonly probes: readonly Statement[]
}

/**
 * One statement that fails when any probe finds a row: a probe is a SELECT that returns a row
 * exactly when an assumption a write was built on no longer holds. On MySQL it fails with
 * ER_SUBQUERY_NO_1_ROW (a scalar subquery of more than one row), which stops the batch it is in
 * before anything after it runs, so a write can send what it assumed, its checks and its changes
 * with the COMMIT in one round trip; on SQLite runEach runs the probes and throws GuardRefusal.
 * Either way isGuardRefusal knows the failure, and the transaction stays open.
 */
export function guardStatement(probes: readonly Statement[]): GuardStatement {
  const members = ['SELECT 1', ...probes.map((probe) => `(${probe.sql})`)].join(' UNION ALL ')
  return {sql: `SELECT (${members}) AS assumptions_hold`, bindings: probes.flatMap((probe) => [...probe.bindings]), probes}
}

/**
 * An INSERT that registers keys, written by a write that assumes they are new: a key stored
 * already (a unique-key violation) fails it with GuardRefusal, as a guardStatement's probe that
 * finds a row does. The violation stops the batch and undoes the INSERT alone (the transaction
 * stays open); the row it found stays locked by the write until the transaction ends.
 */
export function registration(insert: Statement): Statement {
  registrations.add(insert)
  return insert
}

const registrations = new WeakSet<Statement>()

/**
 * A statement that claims Idempotency-Keys (their INSERT, or MySQL 8's NOWAIT read before it): a
 * key stored already or held by a request in flight fails it with KeyClaimRefusal.
 */
export function keyClaim(statement: Statement): Statement {
  keyClaims.add(statement)
  return statement
}

const keyClaims = new WeakSet<Statement>()

/**
 * The error a statement failed with, as the write sees it: GuardRefusal for a registration's
 * taken key, KeyClaimRefusal for a key claim's; the statement's kind recorded for the log.
 */
export function refusalOf(statement: Statement | undefined, error: unknown): unknown {
  if (statement === undefined) return error
  markFailedStatement(error, statement.sql)
  if (registrations.has(statement) && isUniqueViolation(error)) return new GuardRefusal(error)
  if (keyClaims.has(statement)) {
    if (isUniqueViolation(error)) return new KeyClaimRefusal('stored', error)
    if (isLockRefusal(error)) return new KeyClaimRefusal('held', error)
  }
  return error
}

/** A read statement and how to turn its rows into a value. */
export interface Read<T> {
  readonly statement: Statement
  read(result: StatementResult): T
}

/** Runs one read on its own. */
export async function runRead<T>(db: Knex | Knex.Transaction, read: Read<T>): Promise<T> {
  const [result] = await runEach(db, [read.statement])
  return read.read(result!)
}

/**
 * Statements to send together, with handles on the values of its reads:
 * `const stages = batch.read(stagesRead)`, then after `send`, `stages()`.
 */
export class StatementBatch {
  readonly statements: Statement[] = []
  private results: StatementResult[] | null = null

  add(...statements: readonly Statement[]): this {
    this.statements.push(...statements)
    return this
  }

  /**
   * The handle turns the statement's result into its value once per send and gives that value to
   * every later call: a caller may ask per row (`events().get(id)`) without building it again.
   */
  read<T>(read: Read<T>): () => T {
    const position = this.statements.push(read.statement) - 1
    let value: {from: StatementResult[]; of: T} | null = null
    return () => {
      const results = this.results
      if (results === null) throw new Error('the batch has not been sent')
      if (value?.from !== results) value = {from: results, of: read.read(results[position]!)}
      return value.of
    }
  }

  async send(sender: {send(statements: readonly Statement[]): Promise<StatementResult[]>}): Promise<void> {
    this.results = await sender.send(this.statements)
  }
}
