import type {Knex} from 'knex'

/**
 * What per-webhook delivery scheduling needs (docs/api.md, "Delivery scheduling"):
 * - webhooks.max_in_flight: the operator's cap on a webhook's deliveries in flight (null: the default);
 * - webhooks.breaker_*: the webhook's circuit breaker, shared by every worker and shown to operators;
 * - webhooks.previous_secret_ciphertext and secret_rotated_at: the secret a rotation replaced,
 *   which still signs X-Service-Signature-Previous during the overlap;
 * - webhook_in_flight: the deliveries on the wire per webhook, the cap's record where no Redis is
 *   configured (with Redis, a sorted set per webhook holds the same);
 * - deliveries (webhook_id, status, next_attempt_at): a webhook's due deliveries, for its lane.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.alterTable('webhooks', (t) => {
    t.integer('max_in_flight').nullable()
    const state = t.string('breaker_state', 16).notNullable().defaultTo('closed')
    // Compared for identity, like every such column (see the binary-collation migration).
    if (mysql) state.collate('utf8mb4_bin')
    t.bigInteger('breaker_until').nullable()
    t.bigInteger('breaker_opened_at').nullable()
    t.text('previous_secret_ciphertext').nullable()
    t.bigInteger('secret_rotated_at').nullable()
  })
  await knex.schema.alterTable('deliveries', (t) => {
    t.index(['webhook_id', 'status', 'next_attempt_at'])
  })
  await knex.schema.createTable('webhook_in_flight', (t) => {
    const id = t.string('delivery_id', 36).primary()
    const customer = t.string('customer_id', 36).notNullable()
    const webhook = t.string('webhook_id', 40).notNullable()
    if (mysql) for (const column of [id, customer, webhook]) column.collate('utf8mb4_bin')
    t.bigInteger('held_until').notNullable()
    t.index(['customer_id', 'webhook_id'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_in_flight')
  await knex.schema.alterTable('deliveries', (t) => {
    t.dropIndex(['webhook_id', 'status', 'next_attempt_at'])
  })
  await knex.schema.alterTable('webhooks', (t) => {
    for (const column of ['max_in_flight', 'breaker_state', 'breaker_until', 'breaker_opened_at', 'previous_secret_ciphertext', 'secret_rotated_at'])
      t.dropColumn(column)
  })
}
