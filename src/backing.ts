import type {Config} from './config/config.js'
import {unreachableDatabaseError} from './db/database-errors.js'
import {createDb, type Db, pingDatabase, readServerFacts} from './db/knex.js'
import {migrateIfBehind, migrationStatus} from './db/migrate.js'
import {requireWritableServer} from './db/writable.js'
import type {RedisConnection} from './db/redis.js'
import type {Logger} from './log/logger.js'
import {ConfigError} from './shared/errors.js'

export interface BackingOptions {
  /** An open handle on config.database to build on; its opener keeps it and closes it. */
  db?: Db
  logger?: Logger
  /** Migrate on start; default: on the embedded SQLite store only. */
  autoMigrate?: boolean
  /** Refuse to start with pending migrations (the daemon on MySQL); default false. */
  requireCurrentSchema?: boolean
  /** Refuse a read-only server or a replica (the daemon on MySQL); default false. */
  requireWritable?: boolean
  /** Connect to the configured Redis; default true. */
  connectRedis?: boolean
  /** When Redis cannot be reached at start: fail (default), or serve degraded and connect when it returns. */
  redisUnreachable?: 'fail' | 'degrade'
}

/** The database and Redis that services run on, checked and migrated as asked. */
export interface Backing {
  readonly db: Db
  readonly redis: RedisConnection | null
  /** True when this opened the database (and so closes it). */
  readonly ownsDb: boolean
}

/**
 * Opens the backing stores every composition (the daemon's, an operator command's) builds on:
 * the database reached, migrated or checked as asked, and Redis when configured and wanted.
 * Fails with a ConfigError naming the variable when one cannot be reached.
 */
export async function openBacking(config: Config, options: BackingOptions = {}): Promise<Backing> {
  const ownsDb = options.db === undefined
  const db = options.db ?? createDb(config.database, options.logger)
  try {
    await checkDatabase(db, config.database)
    await readServerFacts(db)
    if (options.requireWritable) await requireWritableServer(db)
    if (options.autoMigrate ?? config.database.client === 'sqlite') await migrateIfBehind(db)
    if (options.requireCurrentSchema) await requireCurrentSchema(db)
    let redis: RedisConnection | null = null
    if (config.redis && (options.connectRedis ?? true)) {
      // Loaded here: most operator commands never connect Redis.
      const {connectRedis} = await import('./db/redis.js')
      redis = await connectRedis(config.redis, {logger: options.logger, whenUnreachable: options.redisUnreachable})
    }
    return {db, redis, ownsDb}
  } catch (error) {
    if (ownsDb) await db.destroy()
    throw error
  }
}

async function checkDatabase(db: Db, database: Config['database']): Promise<void> {
  try {
    await pingDatabase(db)
  } catch (error) {
    throw unreachableDatabaseError(error, database)
  }
}

async function requireCurrentSchema(db: Db): Promise<void> {
  const pending = (await migrationStatus(db)).filter((migration) => !migration.applied)
  if (pending.length > 0) {
    throw new ConfigError(
      'LEADS_DATABASE_URL',
      `has ${pending.length} pending migration(s), so the daemon does not start`,
      'run `leads migrate` with the same LEADS_DATABASE_URL, then start the daemon again',
    )
  }
}
