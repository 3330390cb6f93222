import type {Knex} from 'knex'

export async function up(knex: Knex): Promise<void> {
  // One row per email and per phone (last 10 digits) a customer's leads were ever matched on.
  // Writers lock the rows of their request's keys first (an upsert takes an exclusive row lock),
  // so two creates for the same person serialise and the second one merges.
  await knex.schema.createTable('lead_match_locks', (t) => {
    t.string('customer_id', 36).notNullable()
    t.string('match_key', 300).notNullable()
    t.primary(['customer_id', 'match_key'])
  })

  // Idempotency-Key records. status_code is null while the first request is in flight.
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.string('customer_id', 36).notNullable()
    t.string('endpoint', 64).notNullable()
    t.string('idempotency_key', 255).notNullable()
    t.string('request_hash', 64).notNullable()
    t.integer('status_code').nullable()
    t.text('response_body', 'longtext').nullable()
    t.bigInteger('claimed_at').notNullable()
    t.bigInteger('expires_at').notNullable()
    t.primary(['customer_id', 'endpoint', 'idempotency_key'])
    t.index(['expires_at'])
  })

  // Transactional outbox of domain events, written in the transaction that caused them.
  await knex.schema.createTable('events', (t) => {
    t.string('id', 36).primary()
    t.string('customer_id', 36).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('type', 64).notNullable()
    t.string('lead_id', 36).notNullable()
    t.text('payload', 'longtext').notNullable()
    t.bigInteger('created_at').notNullable()
    t.index(['customer_id', 'created_at'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('events')
  await knex.schema.dropTableIfExists('idempotency_keys')
  await knex.schema.dropTableIfExists('lead_match_locks')
}
