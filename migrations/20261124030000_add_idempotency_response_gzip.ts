import type {Knex} from 'knex'

/**
 * A stored response of 8 Ki characters or more is kept gzipped (IdempotencyStore): a bulk
 * request's response of 500 rows is 41 KB of JSON, which MariaDB took 2.9-5.0 ms to write inside
 * the request's transaction, against 1.5-1.9 ms for the same response gzipped (6.5 KB).
 * `response_body` keeps the smaller responses, as text, as before.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.alterTable('idempotency_keys', (t) => {
    // MEDIUMBLOB (16 MiB): a BLOB's 64 KiB could not hold every gzipped bulk response.
    if (mysql) t.specificType('response_gzip', 'mediumblob').nullable()
    else t.binary('response_gzip').nullable()
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropColumn('response_gzip')
  })
}
