import type {Knex} from 'knex'

/**
 * database_writers: one row per running daemon on a Galera cluster, naming the node it writes
 * through and since when (src/db/writer-nodes.ts). Daemons that see stretches on different
 * nodes overlap report a multi-writer setup, which the service does not support
 * (docs/operations.md, "Several writers are detected"). Not a customer's table: the service's own.
 * The column sizes are WRITER_LIMITS's; the code cuts longer values.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.createTable('database_writers', (t) => {
    const daemon = t.string('daemon', 160).primary()
    const nodeId = t.string('node_id', 64).notNullable()
    if (mysql) for (const column of [daemon, nodeId]) column.collate('utf8mb4_bin')
    t.string('role', 16).notNullable()
    t.string('node_name', 128).notNullable()
    t.bigInteger('since').notNullable()
    t.bigInteger('seen_at').notNullable()
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('database_writers')
}
