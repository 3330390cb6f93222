import {batchBudget, isMysql, type Db} from './knex.js'
import {noteStatement} from './statement-observer.js'
import {lostAt, retryingUndone} from './transaction.js'
import {driverResult, refusalOf, runEach, type Statement, statementBytes, type StatementResult, writtenOut} from './statements.js'

/** A write transaction whose statements are sent in batches. */
export interface WriteTransaction {
  /** Sends the statements in order, on MySQL in one round trip; their results, in the same order. */
  send(statements: readonly Statement[]): Promise<StatementResult[]>
  /**
   * Sends writes now, without waiting for them: the database runs them while the work builds the
   * rest. The transaction commits only once they succeeded; a failure fails the transaction.
   */
  sendAhead(statements: readonly Statement[]): void
  /**
   * The statements written out as the database will receive them (MySQL: values in the text,
   * formatted as the connection formats them; SQLite: unchanged), so a write can do that work
   * while it waits on the database rather than when it sends them. The result carries no
   * bindings; it may share a batch with statements that do (the formatter skips quoted text).
   */
  format(statements: readonly Statement[]): Statement[]
}

/** What a transaction's work leaves to be sent with its COMMIT, and the value it returns. */
export interface WriteOutcome<T> {
  value: T
  commitWith: readonly Statement[]
  /**
   * When a statement of commitWith is refused with an error this accepts, the transaction goes on:
   * a refused statement stops its batch (nothing after it runs, the COMMIT included) but keeps
   * the transaction and what ran before it, and the outcome this returns takes over, as if the
   * work had returned it. Undefined: the error stands and the transaction is rolled back. Not
   * with statements sent ahead.
   */
  orElse?: (error: unknown) => Promise<WriteOutcome<T>> | undefined
}

/** What a caller learns of a write while it runs. */
interface WriteOptions {
  /**
   * MySQL: called once everything before the COMMIT has answered, while the COMMIT waits for the
   * redo log to reach the disk, a good part of a create group's time in MariaDB. Another transaction's statements can run meanwhile; GroupCommitter starts the next group.
   */
  committing?: () => void
}

/**
 * Runs `work` in a write transaction (READ COMMITTED on MySQL, see createDb), and again when it
 * was undone: InnoDB picked it as a deadlock victim, or its connection broke before the COMMIT
 * went out (retryingUndone), so `work` must have no side effects outside the transaction. A
 * connection that broke once the COMMIT was sent fails it with WriteOutcomeUnknown.
 *
 * On MySQL the transaction costs no round trips of its own: START TRANSACTION goes out with the
 * first batch and COMMIT with the statements of `commitWith`, so a write is two round trips
 * (what it must read, then everything it writes), or one when it reads nothing first. A failed
 * batch stops at the failing statement; the transaction is then rolled back, unless the outcome's
 * `orElse` takes the refusal and goes on. On SQLite
 * (in-process, no round trips) the statements run one by one in an ordinary transaction.
 */
export async function inWriteTransaction<T>(db: Db, work: (trx: WriteTransaction) => Promise<WriteOutcome<T>>, options: WriteOptions = {}): Promise<T> {
  return retryingUndone(() => (isMysql(db) ? mysqlTransaction(db, work, options) : sqliteTransaction(db, work)))
}

async function sqliteTransaction<T>(db: Db, work: (trx: WriteTransaction) => Promise<WriteOutcome<T>>): Promise<T> {
  return db.transaction(async (trx) => {
    // In-process and one statement at a time: what is sent ahead simply runs first.
    const ahead: Statement[] = []
    let outcome = await work({
      send: (statements) => runEach(trx, statements),
      sendAhead: (statements) => void ahead.push(...statements),
      format: (statements) => [...statements],
    })
    for (;;) {
      try {
        await runEach(trx, [...ahead.splice(0), ...outcome.commitWith])
        return outcome.value
      } catch (error) {
        const next = outcome.orElse?.(error)
        if (!next) throw error
        outcome = await next
      }
    }
  })
}

const BEGIN: Statement = {sql: 'START TRANSACTION', bindings: []}
const COMMIT: Statement = {sql: 'COMMIT', bindings: []}
const ROLLBACK: Statement = {sql: 'ROLLBACK', bindings: []}

async function mysqlTransaction<T>(db: Db, work: (trx: WriteTransaction) => Promise<WriteOutcome<T>>, {committing}: WriteOptions): Promise<T> {
  // Nothing is sent yet: a connection that breaks while it opens fails the attempt as undone.
  const connection = (await db.client.acquireConnection().catch((error: unknown) => Promise.reject(lostAt(error, false)))) as unknown
  let begun = false
  let commitSent = false
  const send = async (statements: readonly Statement[], commit = false): Promise<StatementResult[]> => {
    const opening = begun ? [] : [BEGIN]
    begun = true
    commitSent ||= commit
    const results = await sendBatch(db, [...opening, ...statements, ...(commit ? [COMMIT] : [])], connection, commit ? committing : undefined)
    return results.slice(opening.length, opening.length + statements.length)
  }
  // Batches sent ahead, each already caught so a failure waits for the commit to report it.
  const ahead: Array<Promise<unknown>> = []
  const commit = async ({commitWith}: WriteOutcome<T>) => {
    if (ahead.length > 0) {
      // The COMMIT goes alone, once everything sent ahead is known to have succeeded.
      const rest = send(commitWith)
      // Reported by `await rest` below, or moot when something sent ahead failed first.
      rest.catch(() => undefined)
      for (const result of await Promise.all(ahead)) if (result) throw (result as {failed: unknown}).failed
      await rest
      await send([], true)
    } else await send(commitWith, true)
  }
  try {
    const sendAhead = (statements: readonly Statement[]) => {
      if (statements.length > 0)
        ahead.push(
          send(statements).then(
            () => undefined,
            (error: unknown) => ({failed: error}),
          ),
        )
    }
    const format = (statements: readonly Statement[]) =>
      statements.map((statement) => writtenOut((connection as MysqlConnection).format(statement.sql, statement.bindings)))
    let outcome = await work({send: (statements) => send(statements), sendAhead, format})
    for (;;) {
      try {
        await commit(outcome)
        return outcome.value
      } catch (error) {
        const next = ahead.length === 0 ? outcome.orElse?.(error) : undefined
        if (!next) throw error
        outcome = await next
      }
    }
  } catch (error) {
    // A broken connection fails the rollback too; the pool then discards it (knex validates on acquire).
    if (begun) await sendBatch(db, [ROLLBACK], connection).catch(() => undefined)
    throw lostAt(error, commitSent)
  } finally {
    await db.client.releaseConnection(connection)
  }
}

/** The part of a pooled mysql2 connection a batch needs. */
interface MysqlConnection {
  /** The query's emitter says 'fields' as each statement's answer begins (undefined for a write). */
  query(options: {sql: string}, values: unknown[], done: (error: Error | null, results: unknown) => void): {on(event: 'fields', listener: () => void): void}
  format(sql: string, values: readonly unknown[]): string
}

/**
 * Sends statements in one round trip on MySQL (on `connection`, else a pooled one; outside a
 * transaction each commits on its own), one by one on SQLite; their results in order. A
 * failing statement stops the batch. On MySQL, `lastLeft` is called once every statement but
 * the last has answered (MariaDB and MySQL answer each statement of a batch as it ends). A batch
 * larger than one packet (batchBudget) goes in several round trips, each once the one before
 * has answered; batches sent on a connection meanwhile wait for it, so they run in the order sent.
 *
 * The batch goes straight to the pooled mysql2 connection: knex's raw query would walk the
 * bindings once more before mysql2 formats them, a cost a bulk request's 10,000 values feel.
 */
export async function sendBatch(db: Db, statements: readonly Statement[], connection?: unknown, lastLeft?: () => void): Promise<StatementResult[]> {
  if (statements.length === 0) return []
  if (!isMysql(db)) return runEach(db, statements)
  const own = connection === undefined
  const conn = (own ? await db.client.acquireConnection() : connection) as MysqlConnection
  try {
    const packets = inPackets(statements, batchBudget(db))
    const before = inSeveral.get(conn)
    // One packet and nothing ahead of it: straight onto the connection, which runs queries in order.
    if (packets.length === 1 && !before) return await sendPacket(conn, packets[0]!, lastLeft)
    const answered = (before ?? Promise.resolve()).then(() => sendPackets(conn, packets, lastLeft))
    const settled = answered.then(
      () => undefined,
      () => undefined,
    )
    inSeveral.set(conn, settled)
    void settled.then(() => inSeveral.get(conn) === settled && inSeveral.delete(conn))
    return await answered
  } finally {
    if (own) await db.client.releaseConnection(conn)
  }
}

/** Per connection, a batch sent in several packets (or one waiting behind it), settled once answered. */
const inSeveral = new WeakMap<object, Promise<void>>()

/** Sends packets one after the other, each once the one before has answered; a failure stops the rest. */
async function sendPackets(conn: MysqlConnection, packets: ReadonlyArray<readonly Statement[]>, lastLeft?: () => void): Promise<StatementResult[]> {
  const results: StatementResult[] = []
  for (const [index, packet] of packets.entries()) results.push(...(await sendPacket(conn, packet, index === packets.length - 1 ? lastLeft : undefined)))
  return results
}

/** The statements in runs that each fit in `budget` bytes as sent: one run unless they are very large. */
function inPackets(statements: readonly Statement[], budget: number): Array<readonly Statement[]> {
  const packets: Statement[][] = [[]]
  let bytes = 0
  for (const statement of statements) {
    // The separator that joins it to the one before.
    const size = statementBytes(statement) + 2
    if (bytes + size > budget && packets.at(-1)!.length > 0) {
      packets.push([])
      bytes = 0
    }
    packets.at(-1)!.push(statement)
    bytes += size
  }
  return packets
}

/** Sends statements in one round trip on a MySQL connection; their results in order. */
async function sendPacket(conn: MysqlConnection, statements: readonly Statement[], lastLeft?: () => void): Promise<StatementResult[]> {
  for (const statement of statements) noteStatement(statement.sql, 'mysql')
  const sql = statements.map((statement) => statement.sql).join(';\n')
  // concat, not flatMap: a bulk's batch carries tens of thousands of values, which flatMap copies
  // one by one at many times the cost.
  const values = ([] as unknown[]).concat(...statements.map((statement) => statement.bindings))
  const answer = await new Promise<unknown>((resolve, reject) => {
    // Statements that have answered: the one a failure stops the batch at is the next.
    let answered = 0
    const query = conn.query({sql}, values, (error, results) => (error ? reject(refusalOf(statements[answered], error)) : resolve(results)))
    if (lastLeft && statements.length === 1) lastLeft()
    query.on('fields', () => void (++answered === statements.length - 1 && lastLeft?.()))
  })
  // mysql2 answers a multi-statement query with one result per statement, a single one with its result.
  return (statements.length === 1 ? [answer] : (answer as unknown[])).map(driverResult)
}
