import type {Knex} from 'knex'

/**
 * MySQL compares strings case-insensitively under the default collations, SQLite byte by byte:
 * an Idempotency-Key `KEYCASE-1` replayed `KeyCase-1`'s response on MySQL only, a stage slug or
 * status filter matched in another case, two custom fields `Budget` and `budget` collided on the
 * unique index. Every column compared for identity (ids, keys, hashes, slugs, enums, match keys)
 * becomes utf8mb4_bin, so both backends compare the same way. Only human text stays as it was:
 * names and contact details are searched and sorted case-insensitively.
 */
export const HUMAN_TEXT_COLUMNS: Record<string, readonly string[]> = {
  customers: ['name'],
  stages: ['name'],
  custom_fields: ['name'],
  owners: ['name', 'role_name'],
  api_keys: ['name'],
  leads: ['contact_name', 'contact_phone', 'contact_email'],
  webhooks: ['url', 'disabled_reason'],
  deliveries: ['last_error'],
  delivery_attempts: ['error'],
}

interface VarcharColumn {
  table: string
  column: string
  length: number
  nullable: boolean
}

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'mysql2') return
  await modify(knex, await identityColumns(knex), 'utf8mb4_bin')
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client !== 'mysql2') return
  const [[schema]] = (await knex.raw('SELECT DEFAULT_COLLATION_NAME AS collation FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = DATABASE()')) as [
    Array<{collation: string}>,
  ]
  await modify(knex, await identityColumns(knex), schema!.collation)
}

/** The project's VARCHAR columns that are not human text. */
async function identityColumns(knex: Knex): Promise<VarcharColumn[]> {
  const [rows] = (await knex.raw(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, CHARACTER_MAXIMUM_LENGTH AS len, IS_NULLABLE AS nullable
       FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND DATA_TYPE = 'varchar' AND TABLE_NAME NOT LIKE 'knex\\_%'
      ORDER BY TABLE_NAME, ORDINAL_POSITION`,
  )) as [Array<{t: string; c: string; len: number; nullable: string}>]
  return rows
    .filter((row) => !(HUMAN_TEXT_COLUMNS[row.t] ?? []).includes(row.c))
    .map((row) => ({table: row.t, column: row.c, length: Number(row.len), nullable: row.nullable === 'YES'}))
}

interface ForeignKey {
  name: string
  table: string
  column: string
  referencedTable: string
  referencedColumn: string
  onDelete: string
}

async function modify(knex: Knex, columns: VarcharColumn[], collation: string): Promise<void> {
  // A foreign key joins two columns of one collation, and MariaDB refuses to change either side
  // while it exists (even with FOREIGN_KEY_CHECKS off): drop them, convert, put them back as they were.
  const foreignKeys = await projectForeignKeys(knex)
  for (const key of foreignKeys) await knex.raw(`ALTER TABLE \`${key.table}\` DROP FOREIGN KEY \`${key.name}\``)
  const byTable = new Map<string, VarcharColumn[]>()
  for (const column of columns) byTable.set(column.table, [...(byTable.get(column.table) ?? []), column])
  for (const [table, tableColumns] of byTable) {
    const changes = tableColumns.map(
      (c) => `MODIFY \`${c.column}\` VARCHAR(${c.length}) CHARACTER SET utf8mb4 COLLATE ${collation} ${c.nullable ? 'NULL' : 'NOT NULL'}`,
    )
    await knex.raw(`ALTER TABLE \`${table}\` ${changes.join(', ')}`)
  }
  for (const key of foreignKeys) {
    await knex.raw(
      `ALTER TABLE \`${key.table}\` ADD CONSTRAINT \`${key.name}\` FOREIGN KEY (\`${key.column}\`) REFERENCES \`${key.referencedTable}\` (\`${key.referencedColumn}\`) ON DELETE ${key.onDelete}`,
    )
  }
}

async function projectForeignKeys(knex: Knex): Promise<ForeignKey[]> {
  const [rows] = (await knex.raw(
    `SELECT k.CONSTRAINT_NAME AS name, k.TABLE_NAME AS t, k.COLUMN_NAME AS c, k.REFERENCED_TABLE_NAME AS rt,
            k.REFERENCED_COLUMN_NAME AS rc, r.DELETE_RULE AS onDelete
       FROM information_schema.KEY_COLUMN_USAGE k
       JOIN information_schema.REFERENTIAL_CONSTRAINTS r
         ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME AND r.TABLE_NAME = k.TABLE_NAME
      WHERE k.TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME IS NOT NULL`,
  )) as [Array<{name: string; t: string; c: string; rt: string; rc: string; onDelete: string}>]
  return rows.map((row) => ({name: row.name, table: row.t, column: row.c, referencedTable: row.rt, referencedColumn: row.rc, onDelete: row.onDelete}))
}
