import path from 'node:path'
import {fileURLToPath} from 'node:url'

import knexFactory, {type Knex} from 'knex'

import type {DatabaseConfig} from '../config/config.js'
import type {Logger} from '../log/logger.js'
import {safeMessage} from '../log/safe-error.js'
import {migrationSource} from './migration-source.js'
import {CachingSqliteClient} from './sqlite-client.js'
import {secureSqliteDirectory, secureSqliteFiles} from './sqlite-files.js'
import {installTimeCheck} from './statement-limit.js'
import {type Dialect, noteStatement} from './statement-observer.js'

export type Db = Knex

/** The compiled migrations folder: dist/migrations beside dist/src. */
const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations')

/**
 * Builds the knex instance for either backend. SQLite runs in WAL mode with a busy timeout so
 * the daemon and an operator command can use one file at once.
 */
/** The names of every migration this build has, in order, read from its folder: no database needed. */
export async function knownMigrations(): Promise<string[]> {
  const source = migrationSource(MIGRATIONS_DIR)
  return (await source.getMigrations([])).map((file) => source.getMigrationName(file))
}

export function createDb(database: DatabaseConfig, logger?: Logger): Db {
  const migrations = {migrationSource: migrationSource(MIGRATIONS_DIR), tableName: 'knex_migrations'}
  // knex prints its warnings with the driver's stack ("Acquire connection error: …") on the
  // console; they go to the daemon's log instead, and a command's own one-line error says it all.
  const log = {
    warn: (message: unknown) => logger?.warn({knex: safeMessage(message)}, 'database warning'),
    error: (message: unknown) => logger?.error({knex: safeMessage(message)}, 'database error'),
    deprecate: (method: string, alternative: string) => logger?.warn({knex: `${method} is deprecated; use ${alternative}`}, 'database warning'),
    debug: () => undefined,
  }
  if (database.client === 'sqlite') {
    const onDisk = database.filename !== ':memory:'
    if (onDisk) secureSqliteDirectory(database.filename)
    return observed(
      'sqlite',
      knexFactory({
        log,
        client: CachingSqliteClient as unknown as typeof Knex.Client,
        connection: {filename: database.filename},
        useNullAsDefault: true,
        migrations,
        pool: {
          // better-sqlite3 is synchronous; one connection serialises writers the way SQLite does anyway.
          min: 1,
          max: 1,
          afterCreate(conn: {pragma(sql: string): unknown} & Parameters<typeof installTimeCheck>[0], done: (err: Error | null, conn: unknown) => void) {
            conn.pragma('journal_mode = WAL')
            conn.pragma('busy_timeout = 5000')
            conn.pragma('foreign_keys = ON')
            conn.pragma('synchronous = NORMAL')
            installTimeCheck(conn)
            // The file and its WAL companions exist once journal_mode is set.
            if (onDisk) secureSqliteFiles(database.filename)
            done(null, conn)
          },
        },
      }),
    )
  }
  return observed(
    'mysql',
    knexFactory({
      log,
      client: 'mysql2',
      // multipleStatements: write transactions send their statements in batches, one round trip
      // each (write-transaction.ts). Every value reaches SQL as a binding, never spliced into text.
      connection: {uri: database.url, timezone: 'Z', charset: 'utf8mb4', multipleStatements: true} as Knex.MySql2ConnectionConfig,
      migrations,
      pool: {
        min: 0,
        max: 16,
        // READ COMMITTED for every transaction unless one asks otherwise (see inTransaction): set
        // once per connection, it spares each write transaction a SET round trip.
        afterCreate(conn: {query(sql: string, done: (err: Error | null) => void): void}, done: (err: Error | null, conn: unknown) => void) {
          conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', (err) => done(err, conn))
        },
      },
    }),
  )
}

/**
 * Reports every statement knex sends (builders, raw queries, schema changes, migrations, inside
 * transactions or not) to the statement observer; sendBatch reports the ones it sends itself.
 */
function observed(dialect: Dialect, db: Db): Db {
  db.on('query', (query: {sql: string}) => noteStatement(query.sql, dialect))
  return db
}

/** True when the backend is MySQL/MariaDB; stores branch on it for dialect-specific SQL. */
export function isMysql(db: Db): boolean {
  return db.client.config.client === 'mysql2'
}

/** Asks the database for the smallest answer it gives: fails when it cannot be reached. */
export async function pingDatabase(db: Db): Promise<void> {
  await db.raw('select 1')
}

/**
 * Reads one row of a table, which a database that answers `select 1` may still refuse: a Galera
 * node outside the primary component serves no table (ER_UNKNOWN_COM_ERROR). For /readyz.
 */
export async function probeDatabase(db: Db): Promise<void> {
  await db('knex_migrations').select(db.raw('1')).limit(1)
}

/**
 * Rows per multi-row INSERT: knex writes one on SQLite as a compound SELECT, which SQLite caps at
 * 500 terms; MySQL takes a whole bulk request's rows in one statement (fewer round trips), up to
 * statementBudget.
 */
export function rowsPerInsert(db: Db): number {
  return isMysql(db) ? 4000 : 250
}

/** MariaDB's default max_allowed_packet: what the budgets assume until readServerFacts has read the server's. */
const DEFAULT_MAX_PACKET = 16 * 1024 * 1024

/**
 * The share of the packet one multi-row statement may take: the statements of a write go out
 * together, so one large statement leaves the other half to the rest of its batch.
 */
const STATEMENT_SHARE = 0.5

/** Which server a MySQL handle talks to: the two spell some statements differently. */
export type ServerFlavor = 'mariadb' | 'mysql'

/** What a handle's server told readServerFacts. */
interface ServerFacts {
  maxPacket: number
  flavor: ServerFlavor
}

const serverFacts = new WeakMap<Db, ServerFacts>()

/**
 * Reads the server's max_allowed_packet, which sizes the statements and batches the writes send
 * (statementBudget, batchBudget), and whether it is MariaDB or MySQL (serverFlavor); once, at
 * start (MySQL only). A change on the server takes effect at the daemon's next start.
 */
export async function readServerFacts(db: Db): Promise<void> {
  if (!isMysql(db)) return
  const [rows] = (await db.raw('SELECT @@max_allowed_packet AS max_packet, VERSION() AS version')) as [Array<{max_packet: number | string; version: string}>]
  serverFacts.set(db, {maxPacket: Number(rows[0]!.max_packet), flavor: /mariadb/i.test(rows[0]!.version) ? 'mariadb' : 'mysql'})
}

/** MariaDB or MySQL, as readServerFacts found it; undefined on SQLite and before it ran. */
export function serverFlavor(db: Db): ServerFlavor | undefined {
  return serverFacts.get(db)?.flavor
}

/**
 * The most a multi-row statement may take as sent (see statementBytes): half the server's
 * max_allowed_packet on MySQL. Unlimited on SQLite, whose values are bound outside the text.
 */
export function statementBudget(db: Db): number {
  return isMysql(db) ? Math.floor((serverFacts.get(db)?.maxPacket ?? DEFAULT_MAX_PACKET) * STATEMENT_SHARE) : Infinity
}

/** The most one round trip may carry (MySQL): a batch over it is sent in several, in order, on the same connection. */
export function batchBudget(db: Db): number {
  // The packet holds the command byte besides the text; a little more is left to spare.
  return isMysql(db) ? (serverFacts.get(db)?.maxPacket ?? DEFAULT_MAX_PACKET) - 1024 : Infinity
}
