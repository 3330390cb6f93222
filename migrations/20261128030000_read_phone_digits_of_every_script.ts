import type {Knex} from 'knex'

import {LEAD_LIMITS} from '../src/leads/lead-limits.js'
import {phoneDigits, phoneLast10} from '../src/leads/lead-matching.js'

/**
 * A phone's digits of any script count as the ASCII digits they stand for (phoneDigits in
 * src/leads/lead-matching.ts). A stored phone that mixed them with ASCII digits kept only the
 * ASCII ones in phone_digits and phone_last10: those are read again here, so a later push of the
 * same number merges into it. Only phones with a character beyond ASCII are read (a scan of
 * `leads`, without an index); a phone that would now have more digits than the column holds
 * keeps its keys.
 */
export async function up(knex: Knex): Promise<void> {
  const beyondAscii =
    knex.client.config.client === 'mysql2'
      ? 'LENGTH(contact_phone) <> CHAR_LENGTH(contact_phone)'
      : 'length(contact_phone) <> length(CAST(contact_phone AS BLOB))'
  // Customer by customer, as every statement on a customer's tables is (docs/design.md, sharding).
  for (const customerId of (await knex('customers').pluck('id')) as string[]) {
    const leads = (await knex('leads')
      .where('customer_id', customerId)
      .whereNotNull('contact_phone')
      .whereRaw(beyondAscii)
      .select('id', 'contact_phone', 'phone_digits')) as Array<{id: string; contact_phone: string; phone_digits: string | null}>
    for (const lead of leads) {
      const digits = phoneDigits(lead.contact_phone)
      if (digits === lead.phone_digits || digits === null || digits.length > LEAD_LIMITS.phoneDigits) continue
      await knex('leads')
        .where({customer_id: customerId, id: lead.id})
        .update({phone_digits: digits, phone_last10: phoneLast10(lead.contact_phone)})
    }
  }
}

/** The keys stay as read: a build that reads ASCII digits only matches these leads by their ASCII form. */
export async function down(): Promise<void> {}
