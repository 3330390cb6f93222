import type {Knex} from 'knex'

import {CustomersStore} from '../src/customers/customers-store.js'
import {LeadSearchIndex} from '../src/leads/lead-search-index.js'

/**
 * Search words write the Greek final sigma ς as σ (PLAIN_LETTERS in
 * src/leads/lead-search-terms.ts), so `ΟΔΥΣ`, which lower-cases to `οδυς`, finds Οδυσσέας; and
 * drop the characters that show nothing within a word (INVISIBLE_IN_WORD), so `maximilian` finds
 * a Maxi\u00admilian pasted with a soft hyphen. The words of existing leads are written again by
 * the service's own tokenizer, as `leads maintenance reindex` does.
 */
export async function up(knex: Knex): Promise<void> {
  await new LeadSearchIndex(knex, new CustomersStore(knex)).rebuild()
}

/** The words stay folded: a build that does not fold finds them again after its own `leads maintenance reindex`. */
export async function down(): Promise<void> {}
