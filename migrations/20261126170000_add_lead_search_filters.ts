import type {Knex} from 'knex'

import {CustomersStore} from '../src/customers/customers-store.js'
import {LeadSearchIndex} from '../src/leads/lead-search-index.js'

/**
 * A word-plus-filter search, and a search of several words, answered from one range of
 * lead_search_words (see src/leads/lead-search-store.ts): each word row carries what a list
 * filters on by equality (status, stage_id, lead_line) and all the lead's words (`words`), so
 * the other filters and the other words of a search are checked on the rows of the range itself
 * instead of by a lookup per lead in `leads` or in the (lead_id, word) index.
 *
 * On SQLite the table becomes WITHOUT ROWID, so its rows are stored in key order as InnoDB
 * stores them: a range of a word reads its rows in place instead of looking each row up by
 * rowid. The rows of existing leads are written again by the service's own tokenizer (about a
 * minute per million leads), as `leads maintenance reindex` does later.
 */
const WORDS_MAX_LENGTH = 8192

export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'mysql2') {
    await knex.schema.alterTable('lead_search_words', (t) => {
      // Filled for every row below.
      t.string('status', 32).notNullable().defaultTo('')
      t.string('stage_id', 36).notNullable().defaultTo('')
      t.string('lead_line', 8).nullable()
      // The lead's words, each after a space: a piece begins one of them when ` piece` occurs in
      // it. VARCHAR, not TEXT: MariaDB reads a range of rows with a TEXT column at about half
      // the speed. Long enough for the longest (LEAD_WORDS_MAX_LENGTH in lead-search-terms.ts).
      t.string('words', WORDS_MAX_LENGTH).nullable()
    })
  } else {
    await knex.schema.dropTable('lead_search_words')
    await knex.raw(`CREATE TABLE lead_search_words (
      customer_id varchar(36) NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
      word varchar(200) NOT NULL,
      lead_id varchar(36) NOT NULL,
      status varchar(32) NOT NULL DEFAULT '',
      stage_id varchar(36) NOT NULL DEFAULT '',
      lead_line varchar(8) NULL,
      words varchar(${WORDS_MAX_LENGTH}) NULL,
      PRIMARY KEY (customer_id, word, lead_id)
    ) WITHOUT ROWID`)
    await knex.raw('CREATE INDEX lead_search_words_lead_id_word_index ON lead_search_words (lead_id, word)')
  }
  await new LeadSearchIndex(knex, new CustomersStore(knex)).rebuild()
}

export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'mysql2') {
    await knex.schema.alterTable('lead_search_words', (t) => {
      t.dropColumn('words')
      t.dropColumn('lead_line')
      t.dropColumn('stage_id')
      t.dropColumn('status')
    })
    return
  }
  // The rowid table the words were made in, filled again.
  await knex.schema.dropTable('lead_search_words')
  await knex.schema.createTable('lead_search_words', (t) => {
    t.string('customer_id', 36).notNullable().references('customers.id').onDelete('CASCADE')
    t.string('word', 200).notNullable()
    t.string('lead_id', 36).notNullable()
    t.primary(['customer_id', 'word', 'lead_id'])
    t.index(['lead_id', 'word'])
  })
  await new LeadSearchIndex(knex, new CustomersStore(knex)).rebuild()
}
