import type {Read, Statement} from '../db/statements.js'
import type {LeadInput} from './lead-input.js'
import type {LeadRecord} from './lead-types.js'
import type {LeadMatchStore} from './lead-match-store.js'

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
  const digits = phone === null ? '' : asciiDigits(phone).replace(/\D/g, '')
  return digits === '' ? null : digits
}

/**
 * The text with every decimal digit of any script as its ASCII digit (`５` and `٥` as `5`), so a
 * number typed with a full-width keyboard or in Arabic-Indic digits matches the same number in
 * ASCII; everything else unchanged.
 */
export function asciiDigits(text: string): string {
  return ASCII_ONLY.test(text) ? text : text.replace(DECIMAL_DIGIT, (digit) => String(digitValue(digit.codePointAt(0)!)))
}

const ASCII_ONLY = /^[\u0000-\u007f]*$/
const DECIMAL_DIGIT = /\p{Nd}/gu
const IS_DECIMAL_DIGIT = /^\p{Nd}$/u

/**
 * A decimal digit's value. Unicode encodes each script's digits as a run from 0 to 9 (some runs
 * follow one another, as the mathematical digits do), so it is the digit's place in its run.
 */
function digitValue(codePoint: number): number {
  let zero = codePoint
  while (IS_DECIMAL_DIGIT.test(String.fromCodePoint(zero - 1))) zero -= 1
  return (codePoint - zero) % 10
}

/** The last 10 digits of a phone number, the key two leads' phones are matched on. */
export function phoneLast10(phone: string | null): string | null {
  return phoneDigits(phone)?.slice(-10) ?? null
}

/** What a lead is matched on: its email and phone as given. */
type MatchKeysOf = Pick<LeadInput, 'contactEmail' | 'contactPhone'>

/** A lead with its match keys computed once. */
export interface MatchEntry {
  lead: LeadRecord
  email: string | null
  phone: string | null
}

function entryOf(lead: LeadRecord): MatchEntry {
  return {lead, email: normalizeEmail(lead.contactEmail), phone: phoneLast10(lead.contactPhone)}
}

/** A lead found for an input: by which key, and its position in the pool (age order). */
interface PoolMatch {
  lead: LeadRecord
  by: 'email' | 'phone'
  position: number
}

/**
 * The leads a batch of inputs can match, in age order (the stored candidates oldest first, then
 * the leads the batch creates), with each email's and phone's positions, so a match is a lookup
 * rather than two scans of the whole list per row, which a bulk request's 500 rows would spend
 * while the database sits idle. A merge replaces its lead in place (its age stays) and
 * may give it other keys.
 */
export class MatchPool {
  private readonly entries: MatchEntry[] = []
  private readonly byEmail = new Map<string, number[]>()
  private readonly byPhone = new Map<string, number[]>()

  constructor(candidates: readonly MatchEntry[]) {
    for (const entry of candidates) this.place(this.entries.push(entry) - 1, entry)
  }

  /** The oldest lead with the input's email, else the oldest with its phone's last 10 digits. */
  find(input: MatchKeysOf): PoolMatch | null {
    const email = normalizeEmail(input.contactEmail ?? null)
    const byEmail = email === null ? undefined : this.byEmail.get(email)?.[0]
    if (byEmail !== undefined) return {lead: this.entries[byEmail]!.lead, by: 'email', position: byEmail}
    const phone = phoneLast10(input.contactPhone ?? null)
    const byPhone = phone === null ? undefined : this.byPhone.get(phone)?.[0]
    if (byPhone !== undefined) return {lead: this.entries[byPhone]!.lead, by: 'phone', position: byPhone}
    return null
  }

  /** Adds a lead the batch creates: the youngest. */
  add(lead: LeadRecord): void {
    const entry = entryOf(lead)
    this.place(this.entries.push(entry) - 1, entry)
  }

  /** Puts a merged lead in the place of the one it was merged into. */
  replace(position: number, lead: LeadRecord): void {
    const old = this.entries[position]!
    const entry = entryOf(lead)
    if (old.email !== null) remove(this.byEmail, old.email, position)
    if (old.phone !== null) remove(this.byPhone, old.phone, position)
    this.entries[position] = entry
    this.place(position, entry)
  }

  /** Each lead as the batch leaves it, in age order. */
  leads(): LeadRecord[] {
    return this.entries.map((entry) => entry.lead)
  }

  private place(position: number, entry: MatchEntry): void {
    if (entry.email !== null) insert(this.byEmail, entry.email, position)
    if (entry.phone !== null) insert(this.byPhone, entry.phone, position)
  }
}

/** Adds a position to a key's ascending list (usually at its end: new leads are the youngest). */
function insert(positions: Map<string, number[]>, key: string, position: number): void {
  const list = positions.get(key)
  if (!list) {
    positions.set(key, [position])
    return
  }
  let at = list.length
  while (at > 0 && list[at - 1]! > position) at--
  list.splice(at, 0, position)
}

function remove(positions: Map<string, number[]>, key: string, position: number): void {
  const list = positions.get(key)!
  list.splice(list.indexOf(position), 1)
  if (list.length === 0) positions.delete(key)
}

/**
 * The statements that find the customer's leads any of the inputs could match, oldest first,
 * and how to read them. Inside a write (`lock`), the inputs' match keys are locked first, in
 * sorted order so two writers cannot deadlock, and the leads are read locked: a concurrent push
 * of the same person waits, then sees this one's result. A dry run reads without locking.
 */
export function matchCandidates(
  store: LeadMatchStore,
  customerId: string,
  inputs: readonly MatchKeysOf[],
  lock: boolean,
): {locks: Statement[]; read: Read<MatchEntry[]> | null} {
  const keys = lookupKeys(inputs)
  const found = store.matchRead(customerId, keys, lock)
  return {
    locks: lock ? store.matchKeyLocks(customerId, lockKeys(keys)) : [],
    read: found && {statement: found.statement, read: (result) => found.read(result).map(entryOf)},
  }
}

/**
 * For writes that assume their inputs are all new people: their match keys registered as new
 * (LeadMatchStore.newMatchKeys), which locks them as matchCandidates does and is refused when
 * the customer has a lead any of them matches after all.
 */
export function newPeopleChecks(store: LeadMatchStore, customerId: string, inputs: readonly MatchKeysOf[]): Statement[] {
  return store.newMatchKeys(customerId, lockKeys(lookupKeys(inputs)))
}

/** Match keys as lock names, `e:<email>` and `p:<last 10 digits>`, sorted (the lock order). */
function lockKeys({emails, phones}: {emails: readonly string[]; phones: readonly string[]}): string[] {
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
