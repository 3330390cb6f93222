import type {Knex} from 'knex'

/**
 * Who disabled a webhook: `operator`, `customer` (through the API) or `system` (five days of
 * failures). An operator's disable holds until an operator enables the webhook again; the
 * customer's PATCH cannot undo it.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.alterTable('webhooks', (t) => {
    const column = t.string('disabled_by', 16).nullable()
    // Compared for identity, like every such column (see the binary-collation migration).
    if (mysql) column.collate('utf8mb4_bin')
  })
  await knex('webhooks').where({is_active: false, disabled_reason: 'disabled by an operator'}).update({disabled_by: 'operator'})
  await knex('webhooks').where({is_active: false, disabled_reason: 'every delivery failed for 5 days'}).update({disabled_by: 'system'})
  await knex('webhooks').where({is_active: false}).whereNull('disabled_by').update({disabled_by: 'customer'})
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhooks', (t) => {
    t.dropColumn('disabled_by')
  })
}
