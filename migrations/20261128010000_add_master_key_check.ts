import type {Knex} from 'knex'

/**
 * master_key_check: one row, the fingerprint of the master key the database's webhook secrets
 * are sealed with (src/webhooks/master-key-check.ts), so a daemon or a command run under another
 * key refuses to start rather than seal secrets no daemon can open. The first key used after this
 * migration is adopted; `leads maintenance adopt-master-key` adopts another.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('master_key_check', (t) => {
    t.integer('id').primary()
    t.string('fingerprint', 64).notNullable()
    t.bigInteger('adopted_at').notNullable()
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('master_key_check')
}
