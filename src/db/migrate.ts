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
  // Completed entries are knex's records; pending ones are what our migration source listed (file names).
  const [completed, pending] = (await db.migrate.list()) as [Array<{name: string}>, string[]]
  return [...completed.map((entry) => ({name: entry.name, applied: true})), ...pending.map((file) => ({name: file.replace(/\.js$/, ''), applied: false}))]
}
