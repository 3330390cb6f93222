import type {Knex} from 'knex'

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.string('id', 40).primary()
    t.string('customer_id', 36).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('url', 2048).notNullable()
    t.string('event_types', 255).notNullable()
    t.boolean('is_active').notNullable()
    t.integer('timeout_seconds').notNullable()
    t.integer('retry_attempts').notNullable()
    t.text('description').nullable()
    // AES-256-GCM under a key derived from LEADS_MASTER_KEY; never the plain secret.
    t.text('secret_ciphertext').notNullable()
    t.string('disabled_reason', 255).nullable()
    t.integer('consecutive_failures').notNullable().defaultTo(0)
    t.bigInteger('failing_since').nullable()
    t.bigInteger('last_success_at').nullable()
    t.bigInteger('last_failure_at').nullable()
    t.bigInteger('created_at').notNullable()
    t.bigInteger('updated_at').notNullable()
    t.index(['customer_id'])
  })

  // The outbox: one row per (event, webhook), written in the lead's transaction. The id is the
  // X-Service-Delivery header, the same across all attempts and redeliveries.
  await knex.schema.createTable('deliveries', (t) => {
    t.string('id', 36).primary()
    t.string('customer_id', 36).notNullable()
    t.string('webhook_id', 40).notNullable()
    t.string('event_id', 36).notNullable()
    t.string('status', 16).notNullable()
    t.integer('attempts_made').notNullable().defaultTo(0)
    t.bigInteger('next_attempt_at').notNullable()
    t.bigInteger('dispatched_at').nullable()
    t.string('claimed_by', 64).nullable()
    t.bigInteger('claimed_until').nullable()
    t.string('last_error', 500).nullable()
    t.bigInteger('created_at').notNullable()
    t.bigInteger('updated_at').notNullable()
    t.bigInteger('completed_at').nullable()
    t.index(['status', 'next_attempt_at'])
    t.index(['webhook_id', 'created_at'])
    t.index(['customer_id', 'created_at'])
  })

  await knex.schema.createTable('delivery_attempts', (t) => {
    t.string('id', 36).primary()
    t.string('delivery_id', 36).notNullable()
    t.integer('attempt_number').notNullable()
    t.bigInteger('started_at').notNullable()
    t.integer('duration_ms').notNullable()
    t.integer('status_code').nullable()
    t.string('error', 500).nullable()
    t.text('response_snippet').nullable()
    t.string('outcome', 16).notNullable()
    t.index(['delivery_id', 'started_at'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('delivery_attempts')
  await knex.schema.dropTableIfExists('deliveries')
  await knex.schema.dropTableIfExists('webhooks')
}
