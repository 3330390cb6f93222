import type {Knex} from 'knex'

import {CustomersStore} from '../src/customers/customers-store.js'
import {LeadSearchIndex} from '../src/leads/lead-search-index.js'

/**
 * Search words write letters that have no accent to drop (ł, ø, ß, æ…) as plain Latin letters
 * (PLAIN_LETTERS in src/leads/lead-search-terms.ts), so `lukasz` finds Łukasz. The words of
 * existing leads are written again by the service's own tokenizer (about a minute per million
 * leads), as `leads maintenance reindex` does.
 */
export async function up(knex: Knex): Promise<void> {
  await new LeadSearchIndex(knex, new CustomersStore(knex)).rebuild()
}

/** The words stay folded: a build that does not fold finds them again after its own `leads maintenance reindex`. */
export async function down(): Promise<void> {}
