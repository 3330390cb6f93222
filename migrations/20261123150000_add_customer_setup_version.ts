import type {Knex} from 'knex'

/**
 * A counter on each customer that every change to its stages or custom-field definitions bumps in
 * the same transaction. A write reads only this number (one row by primary key) and reuses the
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
