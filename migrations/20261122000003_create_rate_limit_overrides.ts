import type {Knex} from 'knex'

export async function up(knex: Knex): Promise<void> {
  // Per-customer or per-key limits set by an operator; a null column falls through to the next level.
  await knex.schema.createTable('rate_limit_overrides', (t) => {
    t.string('scope_type', 16).notNullable()
    t.string('scope_id', 36).notNullable()
    t.integer('per_minute').nullable()
    t.integer('per_hour').nullable()
    t.integer('bulk_per_minute').nullable()
    t.bigInteger('updated_at').notNullable()
    t.primary(['scope_type', 'scope_id'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rate_limit_overrides')
}
