import {EventEmitter} from 'node:events'

import {type Db, isMysql} from '../../src/db/knex.js'

/** A write transaction stopped just before its COMMIT. */
export interface HeldCommit {
  /** Resolves once the transaction has run everything but its COMMIT and waits. */
  entered: Promise<void>
  /** Lets the COMMIT go. */
  release: () => void
}

/**
 * Holds the next transaction on `db` that reaches its COMMIT until released. Everything else it
 * sends has run (its Idempotency-Key claimed, its rows written with their time) and it stays
 * open. `db` is the handle the test gave the daemon (TestDaemon.db); both drivers.
 */
export function holdNextCommit(db: Db): HeldCommit {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let entered!: () => void
  const entering = new Promise<void>((resolve) => (entered = resolve))
  beforeNextCommit(db, async () => {
    entered()
    await released
  })
  return {entered: entering, release}
}

/**
 * Fails the next transaction on `db` that reaches its COMMIT, as a lost connection would:
 * everything else has run, the COMMIT is not sent and the write fails with `error`. On MySQL the
 * write rolls back on its own; on SQLite knex would leave the transaction open after a failed
 * COMMIT, so a ROLLBACK goes in its place.
 */
export function failNextCommit(db: Db, error: Error): void {
  beforeNextCommit(db, () => Promise.reject(error))
}

/** A COMMIT alone (knex sends `COMMIT;`) or ending a batch of statements joined by `;` (sendBatch). */
const ENDS_WITH_COMMIT = /(?:^|;\s*)COMMIT;?\s*$/i

/** Where the COMMIT to stop is decided, shared by the connections the handle hands out meanwhile. */
interface CommitGate {
  /** Whether this COMMIT is the one to stop: the first that comes while no other is considered. */
  claim(): boolean
  /** The claimed COMMIT did not come (the batch failed before it): the next one is stopped instead. */
  pass(): void
  /** The claimed COMMIT is due: takes the gate off the handle and runs the action (a hold or a failure). */
  reach(): Promise<void>
}

const gated = new WeakSet<Db>()

/**
 * Runs `action` once the next transaction on `db` has run everything but its COMMIT; the COMMIT
 * goes once it resolves, and fails unsent when it rejects (see failNextCommit). On MySQL every
 * connection `db` hands out meanwhile is watched at the driver: a write transaction sends to it
 * directly (sendBatch), not through knex. On SQLite knex sends every statement (gateSqlite).
 */
function beforeNextCommit(db: Db, action: () => Promise<void>): void {
  if (gated.has(db)) throw new Error('a COMMIT on this handle is already held')
  gated.add(db)
  const client = db.client as {acquireConnection(): Promise<unknown>}
  const acquire = client.acquireConnection
  const watched = new Set<unknown>()
  const undo: Array<() => void> = []
  let claimed = false
  let reached = false
  const gate: CommitGate = {
    claim: () => !reached && !claimed && (claimed = true),
    pass: () => void (claimed = false),
    reach: () => {
      reached = true
      for (const step of undo.splice(0).reverse()) step()
      gated.delete(db)
      return action()
    },
  }
  if (!isMysql(db)) {
    undo.push(gateSqlite(db, gate))
    return
  }
  undo.push(
    override(client, 'acquireConnection', async () => {
      const connection = await acquire.call(client)
      if (!reached && !watched.has(connection)) {
        watched.add(connection)
        undo.push(gateMysql(connection as MysqlConnection, gate))
      }
      return connection
    }),
  )
}

/** The part of a mysql2 connection the gate wraps: knex and sendBatch both call query(options, values, done). */
interface MysqlConnection {
  query(...args: unknown[]): EventEmitter
}

type MysqlDone = (error: unknown, results?: unknown, fields?: unknown) => void

/**
 * Sends a batch that ends with the gate's COMMIT in two: the statements before it, then the
 * COMMIT alone once the gate lets it. The caller gets the answer of the whole batch as mysql2
 * gives it, 'fields' as each statement answers (what sendBatch counts) included.
 */
function gateMysql(connection: MysqlConnection, gate: CommitGate): () => void {
  const query = connection.query
  /** Sends `sql` as it is; resolves with each statement's result, and the fields of a lone statement. */
  const send = (options: object, sql: string, values: unknown, answers: EventEmitter) =>
    new Promise<{results: unknown[]; fields: unknown}>((resolve, reject) => {
      let statements = 0
      const sent = query.call(connection, {...options, sql}, values, (error: unknown, results: unknown, fields: unknown) =>
        error ? reject(error) : resolve({results: statements === 1 ? [results] : (results as unknown[]), fields}),
      )
      sent.on('fields', (fields: unknown) => {
        statements++
        answers.emit('fields', fields)
      })
    })
  return override(connection, 'query', (...args: unknown[]) => {
    const [options, values, done] = args as [{sql?: unknown}, unknown, MysqlDone]
    const sql = typeof options === 'object' && options !== null ? options.sql : undefined
    if (typeof sql !== 'string' || typeof done !== 'function' || !ENDS_WITH_COMMIT.test(sql) || !gate.claim()) return query.apply(connection, args)
    const answers = new EventEmitter()
    const before = sql.replace(ENDS_WITH_COMMIT, '')
    void (async () => {
      let ran: unknown[] = []
      try {
        if (before !== '') ran = (await send(options, before, values, answers)).results
      } catch (error) {
        gate.pass()
        return done(error)
      }
      try {
        await gate.reach()
      } catch (error) {
        // Nothing goes in the COMMIT's place: the write rolls back, as after any batch that failed.
        return done(error)
      }
      try {
        const last = await send(options, 'COMMIT', [], answers)
        if (before === '') done(null, last.results[0], last.fields)
        else done(null, [...ran, ...last.results])
      } catch (error) {
        done(error)
      }
    })()
    return answers
  })
}

/** The part of knex's SQLite client the gate wraps: every statement, COMMIT included, runs through _query. */
interface SqliteClient {
  config: unknown
  _query(connection: unknown, query: {sql: string}): Promise<unknown>
}

/**
 * Knex runs COMMIT on its own through the client's _query; a transaction's client is a copy made
 * from the same prototype, so the gate goes there, for the statements of this handle's clients.
 */
function gateSqlite(db: Db, gate: CommitGate): () => void {
  const prototype = Object.getPrototypeOf(db.client) as SqliteClient
  const runQuery = prototype._query
  const config = (db.client as SqliteClient).config
  return override(prototype, '_query', async function (this: SqliteClient, connection: unknown, query: {sql: string}) {
    if (this.config !== config || !ENDS_WITH_COMMIT.test(query.sql) || !gate.claim()) return runQuery.call(this, connection, query)
    try {
      await gate.reach()
    } catch (error) {
      await runQuery.call(this, connection, {sql: 'ROLLBACK'})
      throw error
    }
    return runQuery.call(this, connection, query)
  })
}

/** Puts `replacement` in `object[name]`; the function returned puts back what was there. */
function override<O extends object, K extends keyof O>(object: O, name: K, replacement: O[K]): () => void {
  const own = Object.getOwnPropertyDescriptor(object, name)
  object[name] = replacement
  return () => void (own ? Object.defineProperty(object, name, own) : Reflect.deleteProperty(object, name))
}
