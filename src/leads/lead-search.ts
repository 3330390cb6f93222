import type {Knex} from 'knex'

import {type Db, isMysql} from '../db/knex.js'
import type {LeadChangeForCount} from './lead-counts.js'
import {normalizeEmail, phoneDigits} from './lead-matching.js'

/**
 * Search that scales: `search` matches a lead by the beginning of a word of its name, the
 * beginning of its email, or the beginning of its phone number's digits (whole or last 10). Each
 * of those is an index range on both backends, so a search costs what it matches, not what the
 * customer holds. The exact rules are in docs/api.md ("Search").
 *
 * Name words live in `lead_search_words` (customer, word, lead), kept in step with the leads by
 * every write path in the lead's own transaction; emails and phone digits are searched in the
 * leads table's own indexes.
 */

/** A search over the words of a term: every word must match. */
export interface WordSearch {
  kind: 'words'
  words: SearchWord[]
}

/** A search for phone digits, formatting ignored. */
export interface PhoneSearch {
  kind: 'phone'
  digits: string
}

export type SearchPlan = WordSearch | PhoneSearch

/** One word of a term: it matches a lead whose email starts with `email`, or whose name has words starting with every one of `nameParts`. */
export interface SearchWord {
  email: string
  nameParts: string[]
}

/** A term made of digits and phone punctuation only is a phone number. */
const PHONE_TERM = /^[\d\s().+\-/]+$/

/**
 * The words of a name as they are indexed and searched: lower-cased, accents dropped (José and
 * Jose are one word), split at anything that is not a letter or a digit, each word once.
 */
export function nameWords(name: string | null): string[] {
  if (name === null) return []
  const folded = name.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()
  // NFKD can lengthen a word (ligatures): cut at what the column holds, in code points as MySQL counts.
  const words = folded.split(/[^\p{L}\p{N}]+/u).filter((word) => word !== '').map((word) => [...word].slice(0, WORD_MAX_LENGTH).join(''))
  return [...new Set(words)]
}

/** The longest word the index holds (lead_search_words.word), as long as a whole name may be. */
export const WORD_MAX_LENGTH = 200

/** How a `search` term is matched; null when it has nothing to match on (only punctuation). */
export function parseSearch(term: string): SearchPlan | null {
  if (PHONE_TERM.test(term)) {
    const digits = phoneDigits(term)
    if (digits !== null) return {kind: 'phone', digits}
  }
  const words = term
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => ({email: normalizeEmail(word) ?? '', nameParts: nameWords(word)}))
    .filter((word) => word.email !== '' || word.nameParts.length > 0)
  return words.length === 0 ? null : {kind: 'words', words}
}

/**
 * The index range of the strings that start with `prefix`: `>= prefix` and `< ` the prefix with
 * its last character raised by one. A range (not LIKE) so SQLite uses the index as MySQL does,
 * and no character of the term needs escaping.
 */
export function prefixRange(prefix: string): [from: string, before: string] {
  const chars = [...prefix]
  const last = chars.pop()!.codePointAt(0)!
  return [prefix, chars.join('') + String.fromCodePoint(last + 1)]
}

function wherePrefix(query: Knex.QueryBuilder, column: string, prefix: string): Knex.QueryBuilder {
  const [from, before] = prefixRange(prefix)
  return query.where(column, '>=', from).andWhere(column, '<', before)
}

/** The ids of the customer's leads one word (or the phone digits) can match: the union of index ranges. */
export function matchingIds(db: Knex, customerId: string, plan: PhoneSearch | SearchWord): Knex.QueryBuilder {
  if ('digits' in plan) {
    const whole = wherePrefix(db('leads').select('id as lead_id').where('customer_id', customerId), 'phone_digits', plan.digits)
    if (plan.digits.length > 10) return whole
    return whole.union((q) => wherePrefix(q.from('leads').select('id as lead_id').where('customer_id', customerId), 'phone_last10', plan.digits))
  }
  const byEmail = (q: Knex.QueryBuilder) => wherePrefix(q.from('leads').select('id as lead_id').where('customer_id', customerId), 'email_normalized', plan.email)
  if (plan.nameParts.length === 0) return byEmail(db.queryBuilder())
  // The longest part narrows most; the others are checked per lead.
  const [first, ...rest] = [...plan.nameParts].sort((a, b) => b.length - a.length)
  const byName = wherePrefix(db('lead_search_words as w').select('w.lead_id').where('w.customer_id', customerId), 'w.word', first!)
  for (const part of rest) byName.whereExists((sub) => nameWordProbe(sub, customerId, 'w.lead_id', part))
  return plan.email === '' ? byName : byName.union((q) => byEmail(q))
}

/** Restricts a query over `leads` to the leads one word (or the phone digits) matches, checked on each lead: for walking an ordered index. */
export function whereMatches(query: Knex.QueryBuilder, customerId: string, plan: PhoneSearch | SearchWord): void {
  query.where((match) => {
    if ('digits' in plan) {
      match.where((q) => wherePrefix(q, 'leads.phone_digits', plan.digits)).orWhere((q) => wherePrefix(q, 'leads.phone_last10', plan.digits))
      return
    }
    match.where((q) => wherePrefix(q, 'leads.email_normalized', plan.email))
    if (plan.nameParts.length > 0) {
      match.orWhere((byName) => {
        for (const part of plan.nameParts) byName.whereExists((sub) => nameWordProbe(sub, customerId, 'leads.id', part))
      })
    }
  })
}

/** Whether the lead in `leadColumn` has a name word starting with `part` (one lookup in the (lead_id, word) index). */
function nameWordProbe(sub: Knex.QueryBuilder, customerId: string, leadColumn: string, part: string): void {
  const [from, before] = prefixRange(part)
  sub
    .from('lead_search_words as p')
    .select('p.lead_id')
    .whereRaw(`p.lead_id = ${leadColumn}`)
    .andWhere('p.customer_id', customerId)
    .andWhere('p.word', '>=', from)
    .andWhere('p.word', '<', before)
}

/** Keeps `lead_search_words` in step with the leads, inside the write's transaction. */
export class LeadSearchIndex {
  constructor(private readonly db: Db) {}

  /** Adds and removes the name words of written leads: only what changed is touched. */
  async apply(trx: Knex.Transaction, changes: readonly LeadChangeForCount[]): Promise<void> {
    const added: Array<{customer_id: string; word: string; lead_id: string}> = []
    const removed: Array<[customerId: string, word: string, leadId: string]> = []
    for (const {before, after} of changes) {
      if (before !== null && before.contactName === after.contactName) continue
      const old = new Set(nameWords(before?.contactName ?? null))
      const now = new Set(nameWords(after.contactName))
      for (const word of now) if (!old.has(word)) added.push({customer_id: after.customerId, word, lead_id: after.id})
      for (const word of old) if (!now.has(word)) removed.push([after.customerId, word, after.id])
    }
    for (let start = 0; start < removed.length; start += 200) {
      const chunk = removed.slice(start, start + 200)
      await trx('lead_search_words').whereIn(['customer_id', 'word', 'lead_id'], chunk).delete()
    }
    for (let start = 0; start < added.length; start += WORDS_CHUNK) {
      await trx('lead_search_words').insert(added.slice(start, start + WORDS_CHUNK))
    }
  }

  /**
   * Rebuilds the words of one customer's leads, or every customer's, from their names; for data
   * written around the service. Returns how many leads it indexed. Each batch of leads is read
   * locked (MySQL) while its words are replaced, so a concurrent rename is never undone.
   */
  async rebuild(customerId?: string): Promise<number> {
    const customers = customerId === undefined ? ((await this.db('customers').pluck('id')) as string[]) : [customerId]
    let indexed = 0
    for (const id of customers) {
      for (let after = ''; ; ) {
        const batch = await this.db.transaction(async (trx) => {
          const query = trx('leads').where('customer_id', id).andWhere('id', '>', after).orderBy('id').limit(REBUILD_BATCH).select('id', 'contact_name')
          if (isMysql(this.db)) query.forShare()
          const leads = (await query) as Array<{id: string; contact_name: string | null}>
          if (leads.length === 0) return leads
          await trx('lead_search_words').whereIn('lead_id', leads.map((lead) => lead.id)).delete()
          const rows = leads.flatMap((lead) => nameWords(lead.contact_name).map((word) => ({customer_id: id, word, lead_id: lead.id})))
          for (let start = 0; start < rows.length; start += WORDS_CHUNK) await trx('lead_search_words').insert(rows.slice(start, start + WORDS_CHUNK))
          return leads
        })
        if (batch.length === 0) break
        indexed += batch.length
        after = batch.at(-1)!.id
      }
    }
    return indexed
  }
}

const REBUILD_BATCH = 1000

/** Rows per insert: SQLite caps a compound SELECT at 500 terms (see INSERT_CHUNK in leads-store). */
const WORDS_CHUNK = 250
