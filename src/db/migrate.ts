import type {Knex} from 'knex'

import type {Db} from './knex.js'

export interface MigrationStatus {
  name: string
  applied: boolean
}

/** Runs every pending migration; returns the names it applied, in order. */
export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]]
  return applied
}

/** Lists every known migration and whether it has run. */
export async function migrationStatus(db: Db): Promise<MigrationStatus[]> {
  // knex's list() creates its two bookkeeping tables where either is missing (an empty database):
  // --status changes nothing, so there the applied names are read here, if there are any.
  const {migrations} = db.client.config as Knex.Config
  const table = migrations?.tableName
  const source = migrations?.migrationSource
  if (table !== undefined && source !== undefined) {
    const [hasTable, hasLock] = await Promise.all([db.schema.hasTable(table), db.schema.hasTable(`${table}_lock`)])
    if (!hasTable || !hasLock) {
      const applied: string[] = hasTable ? await db(table).orderBy('id').pluck('name') : []
      const known = (await source.getMigrations([])).map((migration) => source.getMigrationName(migration))
      return [...applied.map((name) => ({name, applied: true})), ...known.filter((name) => !applied.includes(name)).map((name) => ({name, applied: false}))]
    }
  }
  // Completed entries are knex's records; pending ones are what our migration source listed (file names).
  const [completed, pending] = (await db.migrate.list()) as [Array<{name: string}>, string[]]
  return [...completed.map((entry) => ({name: entry.name, applied: true})), ...pending.map((file) => ({name: file.replace(/\.js$/, ''), applied: false}))]
}

/**
 * Runs the pending migrations, if any: what every start on the embedded store does. When the
 * applied list already names exactly the known migrations, one read answers, without knex's
 * round of checks and its lock taken and freed (two writes) on each latest(). Anything else
 * (a pending migration, an unknown one, no table yet) goes to migrateLatest, which decides.
 */
export async function migrateIfBehind(db: Db): Promise<string[]> {
  return (await upToDate(db)) ? [] : migrateLatest(db)
}

async function upToDate(db: Db): Promise<boolean> {
  const {migrations} = db.client.config as Knex.Config
  const source = migrations?.migrationSource
  if (source === undefined || migrations?.tableName === undefined) return false
  const applied: string[] | null = await db(migrations.tableName)
    .pluck('name')
    .catch(() => null)
  if (applied === null) return false
  const known = (await source.getMigrations([])).map((migration) => source.getMigrationName(migration))
  const done = new Set(applied)
  return done.size === applied.length && applied.length === known.length && known.every((name) => done.has(name))
}
