import type {Knex} from 'knex'

/**
 * Deliveries by the time they last changed: `leads deliveries tail` follows new deliveries and
 * recorded attempts (each bumps updated_at) with an index range instead of reading every delivery
 * each second.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deliveries', (t) => {
    t.index(['updated_at'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deliveries', (t) => {
    t.dropIndex(['updated_at'])
  })
}
