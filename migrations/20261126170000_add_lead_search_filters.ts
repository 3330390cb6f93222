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
 * The rows of existing leads are written again by the service's own tokenizer (about a minute
 * per million leads), as `leads maintenance reindex` does later.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lead_search_words', (t) => {
    // Filled for every row below; the empty default only lets SQLite add a NOT NULL column.
    t.string('status', 32).notNullable().defaultTo('')
    t.string('stage_id', 36).notNullable().defaultTo('')
    t.string('lead_line', 8).nullable()
    // The lead's words, each after a space: a piece begins one of them when ` piece` occurs in it.
    t.text('words').nullable()
  })
  await new LeadSearchIndex(knex, new CustomersStore(knex)).rebuild()
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('lead_search_words', (t) => {
    t.dropColumn('words')
    t.dropColumn('lead_line')
    t.dropColumn('stage_id')
    t.dropColumn('status')
  })
}
