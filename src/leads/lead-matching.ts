import type {Read, Statement} from '../db/statements.js'
import type {LeadInput} from './lead-input.js'
import type {LeadRecord} from './lead-types.js'
import type {LeadsStore} from './leads-store.js'

/**
 * How a pushed lead finds the customer's lead it merges into, for single creates and bulk alike:
 * the match keys, the locks that serialise writers of one person, the candidates read from the
 * store and the rule that picks among them.
 *
 * The rule: the customer's oldest lead with the same email (trimmed, lower-cased); failing that,
 * the oldest with the same last 10 phone digits.
 */

/** Lower-cased, trimmed email: the form emails are matched and searched in. */
export function normalizeEmail(email: string | null): string | null {
  const trimmed = email?.trim().toLowerCase()
  return trimmed ? trimmed : null
}

/** Every digit of a phone number, formatting dropped; null when it has none. */
export function phoneDigits(phone: string | null): string | null {
  const digits = phone?.replace(/\D/g, '') ?? ''
  return digits === '' ? null : digits
}

/** The last 10 digits of a phone number, the key two leads' phones are matched on. */
export function phoneLast10(phone: string | null): string | null {
  return phoneDigits(phone)?.slice(-10) ?? null
}

/** What a lead is matched on: its email and phone as given. */
export type MatchKeysOf = Pick<LeadInput, 'contactEmail' | 'contactPhone'>

/** A lead with its match keys computed once. */
export interface MatchEntry {
  lead: LeadRecord
  email: string | null
  phone: string | null
}

export function entryOf(lead: LeadRecord): MatchEntry {
  return {lead, email: normalizeEmail(lead.contactEmail), phone: phoneLast10(lead.contactPhone)}
}

/** The oldest lead with the input's email, else the oldest with its phone's last 10 digits (leads in age order). */
export function findMatch(leads: MatchEntry[], input: LeadInput): {lead: LeadRecord; by: 'email' | 'phone'; position: number} | null {
  const email = normalizeEmail(input.contactEmail ?? null)
  if (email !== null) {
    const position = leads.findIndex((entry) => entry.email === email)
    if (position >= 0) return {lead: leads[position]!.lead, by: 'email', position}
  }
  const phone = phoneLast10(input.contactPhone ?? null)
  if (phone !== null) {
    const position = leads.findIndex((entry) => entry.phone === phone)
    if (position >= 0) return {lead: leads[position]!.lead, by: 'phone', position}
  }
  return null
}

/**
 * The statements that find the customer's leads any of the inputs could match, oldest first,
 * and how to read them. Inside a write (`lock`), the inputs' match keys are locked first, in
 * sorted order so two writers cannot deadlock, and the leads are read locked: a concurrent push
 * of the same person waits, then sees this one's result. A dry run reads without locking.
 */
export function matchCandidates(store: LeadsStore, customerId: string, inputs: readonly MatchKeysOf[], lock: boolean): {locks: Statement[]; read: Read<MatchEntry[]> | null} {
  const found = store.matchRead(customerId, lookupKeys(inputs), lock)
  return {
    locks: lock ? store.matchKeyLocks(customerId, lockKeys(inputs)) : [],
    read: found && {statement: found.statement, read: (result) => found.read(result).map(entryOf)},
  }
}

/**
 * For writes that assume their inputs are all new people: the locks on the inputs' match keys
 * (as matchCandidates takes them) and the probes that find a row when the customer has a lead
 * any of them matches after all (see guardStatement).
 */
export function newPeopleChecks(store: LeadsStore, customerId: string, inputs: readonly MatchKeysOf[]): {locks: Statement[]; probes: Statement[]} {
  return {locks: store.matchKeyLocks(customerId, lockKeys(inputs)), probes: store.matchProbes(customerId, lookupKeys(inputs))}
}

/** The inputs' match keys as lock names, `e:<email>` and `p:<last 10 digits>`, distinct and sorted (the lock order). */
function lockKeys(inputs: readonly MatchKeysOf[]): string[] {
  const {emails, phones} = lookupKeys(inputs)
  return [...emails.map((email) => `e:${email}`), ...phones.map((phone) => `p:${phone}`)].sort()
}

/** The inputs' distinct normalised emails and last-10 phone digits. */
function lookupKeys(inputs: readonly MatchKeysOf[]): {emails: string[]; phones: string[]} {
  const emails = new Set<string>()
  const phones = new Set<string>()
  for (const input of inputs) {
    const email = normalizeEmail(input.contactEmail ?? null)
    const phone = phoneLast10(input.contactPhone ?? null)
    if (email !== null) emails.add(email)
    if (phone !== null) phones.add(phone)
  }
  return {emails: [...emails], phones: [...phones]}
}
