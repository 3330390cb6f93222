import type {Knex} from 'knex'

/**
 * A counter on each customer, bumped in the same transaction by every change to its stages, its
 * custom-field definitions or which of its webhooks an event goes to. A write reads only this number (one row by primary key) and reuses the
 * stages and fields it read before while the number is unchanged.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('customers', (t) => {
    t.bigInteger('setup_version').notNullable().defaultTo(0)
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('customers', (t) => {
    t.dropColumn('setup_version')
  })
}
