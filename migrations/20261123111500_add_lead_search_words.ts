import type {Knex} from 'knex'

/**
 * Search that scales (see src/leads/lead-search-terms.ts): the words of every lead's name and email in
 * their own table, so a word prefix is an index range, with the same rules on both backends (a
 * FULLTEXT index on MariaDB skips words under three letters and a stopword list; FTS5 does not).
 * Phone digits are searched by prefix in indexes of the leads table.
 *
 * The words of existing leads are written by the later migration that gives each word row its
 * lead's filters (20261126170000_add_lead_search_filters), with the service's own tokenizer: that
 * code writes the columns of the current table, which this one does not have yet.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.createTable('lead_search_words', (t) => {
    // Words are compared as the tokenizer made them (lower-cased, accents dropped): byte for byte.
    if (mysql) t.collate('utf8mb4_bin')
    t.string('customer_id', 36).notNullable().references('customers.id').onDelete('CASCADE')
    // A word is at most a whole name (200 characters).
    t.string('word', 200).notNullable()
    // No foreign key to leads: leads are only ever deleted with their customer, and the check
    // would cost every word of every write a lookup.
    t.string('lead_id', 36).notNullable()
    t.primary(['customer_id', 'word', 'lead_id'])
    // Checking one lead's words (a search of several words) and replacing them.
    t.index(['lead_id', 'word'])
  })
  await knex.schema.alterTable('leads', (t) => {
    t.index(['customer_id', 'phone_digits'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('leads', (t) => {
    t.dropIndex(['customer_id', 'phone_digits'])
  })
  await knex.schema.dropTableIfExists('lead_search_words')
}
