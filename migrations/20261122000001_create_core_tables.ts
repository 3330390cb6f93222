import type {Knex} from 'knex'

// Timestamps are BIGINT epoch milliseconds in both dialects: exact ordering for keyset cursors,
// no time-zone conversion in either driver, and one code path for SQLite and MySQL.
const UUID = 36

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('customers', (t) => {
    t.string('id', UUID).primary()
    t.string('name', 200).notNullable()
    t.bigInteger('created_at').notNullable()
  })

  await knex.schema.createTable('stages', (t) => {
    t.string('id', UUID).primary()
    t.string('customer_id', UUID).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('slug', 64).notNullable()
    t.string('name', 200).notNullable()
    t.string('color', 7).notNullable()
    t.integer('position').notNullable()
    t.bigInteger('created_at').notNullable()
    t.unique(['customer_id', 'slug'])
  })

  await knex.schema.createTable('custom_fields', (t) => {
    t.string('id', UUID).primary()
    t.string('customer_id', UUID).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('slug', 64).notNullable()
    t.string('name', 200).notNullable()
    t.string('type', 16).notNullable()
    t.bigInteger('created_at').notNullable()
    t.unique(['customer_id', 'slug'])
  })

  await knex.schema.createTable('owners', (t) => {
    t.string('id', UUID).primary()
    t.string('customer_id', UUID).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('name', 200).notNullable()
    t.string('role_name', 100).notNullable()
    t.bigInteger('created_at').notNullable()
    t.index(['customer_id'])
  })

  await knex.schema.createTable('api_keys', (t) => {
    t.string('id', UUID).primary()
    t.string('customer_id', UUID).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('name', 200).nullable()
    t.string('scopes', 500).notNullable()
    t.boolean('internal').notNullable().defaultTo(false)
    t.bigInteger('created_at').notNullable()
    t.bigInteger('expires_at').nullable()
    t.bigInteger('revoked_at').nullable()
    t.bigInteger('last_used_at').nullable()
    t.index(['customer_id'])
  })

  // A key keeps its id (and so its rate-limit bucket and overrides) across rotations; each
  // rotation adds a token row. Only the SHA-256 of a token is stored.
  await knex.schema.createTable('api_tokens', (t) => {
    t.string('token_hash', 64).primary()
    t.string('key_id', UUID).notNullable().references('api_keys.id').onDelete('CASCADE')
    t.bigInteger('created_at').notNullable()
    t.bigInteger('retires_at').nullable()
    t.index(['key_id'])
  })

  await knex.schema.createTable('leads', (t) => {
    t.string('id', UUID).primary()
    t.string('customer_id', UUID).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('source_platform', 32).notNullable()
    t.string('source_type', 16).notNullable()
    t.string('status', 32).notNullable()
    t.bigInteger('created_at').notNullable()
    t.bigInteger('updated_at').notNullable()
    t.string('contact_name', 200).nullable()
    t.string('contact_phone', 64).nullable()
    t.string('contact_email', 254).nullable()
    // Normalised match keys: lower-cased trimmed email, all digits of the phone, last 10 digits.
    t.string('email_normalized', 254).nullable()
    t.string('phone_digits', 32).nullable()
    t.string('phone_last10', 10).nullable()
    t.integer('score').nullable()
    t.boolean('qualified').nullable()
    t.string('stage_id', UUID).notNullable().references('stages.id')
    t.string('owner_id', UUID).nullable().references('owners.id')
    t.bigInteger('last_interaction_at').nullable()
    t.integer('interaction_count').notNullable().defaultTo(0)
    t.string('lead_line', 8).nullable()
    t.text('custom_fields').notNullable()
    t.index(['customer_id', 'updated_at', 'id'])
    t.index(['customer_id', 'created_at', 'id'])
    t.index(['customer_id', 'last_interaction_at', 'id'])
    t.index(['customer_id', 'status', 'updated_at', 'id'])
    t.index(['customer_id', 'stage_id', 'updated_at', 'id'])
    t.index(['customer_id', 'lead_line', 'updated_at', 'id'])
    t.index(['customer_id', 'email_normalized'])
    t.index(['customer_id', 'phone_last10'])
  })
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['leads', 'api_tokens', 'api_keys', 'owners', 'custom_fields', 'stages', 'customers']) {
    await knex.schema.dropTableIfExists(table)
  }
}
