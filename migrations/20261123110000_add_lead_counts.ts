import type {Knex} from 'knex'

/**
 * Kept counts of each customer's leads per (status, stage, lead line), so `total` of an
 * unfiltered or equality-filtered list is a sum over a few rows instead of a COUNT(*) over up to
 * millions (about a second at 1,000,000 leads on MariaDB). Every write changes them in the
 * lead's own transaction (LeadCountsStore). A counter is split into slots (the writer's
 * connection picks one on MySQL) so one customer's concurrent writers do not queue on one row;
 * reads sum the slots. Existing leads are counted here, into slot 0.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.createTable('lead_counts', (t) => {
    // Every column is compared for identity (see the binary-collation migration).
    if (mysql) t.collate('utf8mb4_bin')
    t.string('customer_id', 36).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('status', 32).notNullable()
    t.string('stage_id', 36).notNullable()
    // '' for a lead without a lead line: a key column cannot be NULL.
    t.string('lead_line', 8).notNullable()
    t.integer('slot').notNullable()
    t.bigInteger('n').notNullable()
    t.primary(['customer_id', 'status', 'stage_id', 'lead_line', 'slot'])
  })
  await knex.raw(
    `INSERT INTO lead_counts (customer_id, status, stage_id, lead_line, slot, n)
     SELECT customer_id, status, stage_id, COALESCE(lead_line, ''), 0, COUNT(*) FROM leads GROUP BY customer_id, status, stage_id, COALESCE(lead_line, '')`,
  )
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('lead_counts')
}
