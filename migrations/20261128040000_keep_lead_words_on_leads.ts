import type {Knex} from 'knex'

import {CustomersStore} from '../src/customers/customers-store.js'
import {LeadSearchIndex} from '../src/leads/lead-search-index.js'

/**
 * A lead's words on the lead's own row (`leads.search_words`, each after a space, as every word
 * row's `words` holds them): a search that walks leads in a list's order, or starts from an email
 * address, checks its words on the row it has read. The (lead_id, word) index of
 * lead_search_words, which those checks looked words up in, goes, and with it an index entry for
 * every word row a write inserts.
 *
 * Every word row is written afresh here by the service's own tokenizer (about a minute per
 * million leads), as `leads maintenance reindex` does: the earlier migrations that changed the
 * words leave that to this one, as that code writes the columns of the current tables.
 */
const WORDS_MAX_LENGTH = 8192

export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  await knex.schema.alterTable('leads', (t) => {
    // Compared byte for byte, as the word rows' words are.
    const column = t.string('search_words', WORDS_MAX_LENGTH).nullable()
    if (mysql) column.collate('utf8mb4_bin')
  })
  await knex.schema.alterTable('lead_search_words', (t) => {
    t.dropIndex(['lead_id', 'word'])
  })
  await knex('lead_search_words').truncate()
  await new LeadSearchIndex(knex, new CustomersStore(knex)).rebuild()
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lead_search_words', (t) => {
    t.index(['lead_id', 'word'])
  })
  await knex.schema.alterTable('leads', (t) => {
    t.dropColumn('search_words')
  })
}
