import type {Knex} from 'knex'

/**
 * The change feed `leads pull` syncs on: `leads.change_seq` numbered from a per-customer counter
 * (`lead_change_sequences.last_seq`). As first built, each write stamped the number as its last
 * statement; writes now only set 0 (pending) and a reader numbers committed pending leads after
 * their commit (LeadsStore.sequencePending), which no longer queues a customer's writers on the
 * counter. The schema is the same for both; existing leads are numbered here in the order they
 * last changed.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.createTable('lead_change_sequences', (t) => {
    const customer = t.string('customer_id', 36).notNullable().primary()
    if (mysql) customer.collate('utf8mb4_bin')
    t.bigInteger('last_seq').notNullable()
  })
  await knex.schema.alterTable('leads', (t) => {
    t.bigInteger('change_seq').notNullable().defaultTo(0)
    // With id: leads never stamped (seeded straight into the table) share sequence 0 and page by id.
    t.index(['customer_id', 'change_seq', 'id'])
  })
  // Existing leads get sequence numbers in the order they last changed.
  const numbered = `SELECT id, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY updated_at, id) AS seq FROM leads`
  if (mysql) await knex.raw(`UPDATE leads JOIN (${numbered}) numbered ON numbered.id = leads.id SET leads.change_seq = numbered.seq`)
  else await knex.raw(`UPDATE leads SET change_seq = numbered.seq FROM (${numbered}) AS numbered WHERE numbered.id = leads.id`)
  await knex.raw(`INSERT INTO lead_change_sequences (customer_id, last_seq) SELECT customer_id, MAX(change_seq) FROM leads GROUP BY customer_id`)
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('leads', (t) => {
    t.dropIndex(['customer_id', 'change_seq', 'id'])
    t.dropColumn('change_seq')
  })
  await knex.schema.dropTableIfExists('lead_change_sequences')
}
