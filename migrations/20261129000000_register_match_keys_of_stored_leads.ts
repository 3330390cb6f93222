import type {Knex} from 'knex'

/**
 * Every stored lead's email and phone (last 10 digits) get a row in `lead_match_locks`, the rows
 * a single create guessed to be a new person registers its keys in and is refused by
 * (LeadMatchStore.newMatchKeys): a lead whose key has no row would take a create of the same
 * person for a new one. Writes lock a key before they store it, which leaves its row, so this
 * adds only the keys of leads stored otherwise, such as those whose phone keys
 * 20261128030000_read_phone_digits_of_every_script read again.
 */
export async function up(knex: Knex): Promise<void> {
  const mysql = knex.client.config.client === 'mysql2'
  const insertMissing = mysql ? 'INSERT IGNORE INTO' : 'INSERT OR IGNORE INTO'
  const prefixed = (prefix: string, column: string) => (mysql ? `CONCAT('${prefix}', ${column})` : `'${prefix}' || ${column}`)
  // Customer by customer, as every statement on a customer's tables is (docs/design.md, sharding).
  for (const customerId of (await knex('customers').pluck('id')) as string[]) {
    for (const [prefix, column] of [
      ['e:', 'email_normalized'],
      ['p:', 'phone_last10'],
    ] as const) {
      await knex.raw(
        `${insertMissing} lead_match_locks (customer_id, match_key) SELECT customer_id, ${prefixed(prefix, column)} FROM leads WHERE customer_id = ? AND ${column} IS NOT NULL`,
        [customerId],
      )
    }
  }
}

/** The rows stay: a key's row only ever means a lead of the customer may have that key. */
export async function down(): Promise<void> {}
