import {LEAD_LIMITS} from './lead-limits.js'
import {asciiDigits, normalizeEmail, phoneDigits} from './lead-matching.js'

/**
 * The rules of `search`, apart from any SQL: a term matches a lead when every word of the term
 * begins a word of the lead's name or of its email before the @, or begins its email when the
 * word has an @; for a phone number, when its digits begin the lead's number, or its last 10
 * digits (all of a shorter term's) begin the lead's last 10. Each rule is a prefix, so the store
 * can answer it as an index range on both backends.
 * The rules for users are in docs/api.md ("Search"); the queries are in lead-search-store.ts.
 */

export type SearchPlan = (
  | /** Every piece must begin one of the lead's words; every address must begin its email. */
    {kind: 'words'; pieces: string[]; addresses: string[]}
    /**
     * `digits` must begin the lead's phone number, or `last10` its last 10 digits: all the digits
     * of a short term, the last 10 of a longer one (a number with its country code finds the
     * number stored without it, the one a create would merge into).
     */
  | {kind: 'phone'; digits: string; last10: string}
) & {
  /**
   * How many index entries each piece's range holds, in the pieces' order (for a phone or an
   * address, the range it drives from): estimated by the store, which drives from the first.
   */
  sizes?: number[]
}

/** A term made of digits and phone punctuation only is a phone number. */
const PHONE_TERM = /^[\d\s().+\-/]+$/

/** The longest word the index holds (lead_search_words.word), as long as a whole name may be. */
export const WORD_MAX_LENGTH = 200

/** The most NFKD lengthens one character: U+FDFA becomes 18 (PLAIN_LETTERS at most 2). */
const NFKD_MAX_EXPANSION = 18

/**
 * The longest a lead's words can be, each after a space (lead_search_words.words): its name and
 * email, folded, with a space before each part.
 */
export const LEAD_WORDS_MAX_LENGTH = (LEAD_LIMITS.contactName + LEAD_LIMITS.contactEmail) * NFKD_MAX_EXPANSION + 2

/**
 * Letters that NFKD leaves whole (no accent to drop) but that a user types as plain Latin
 * letters: `lukasz` finds Łukasz, `weiss` Weiß, `oyvind` Øyvind, `aero` Ærø; and ς as σ.
 */
const PLAIN_LETTERS: Readonly<Record<string, string>> = {
  ...{ł: 'l', ŀ: 'l', ø: 'o', đ: 'd', ð: 'd', ħ: 'h', ŧ: 't', ı: 'i', æ: 'ae', œ: 'oe', þ: 'th', ß: 'ss'},
  // Greek final sigma is σ (as Unicode case folding has it): Σ ending a term lower-cases to ς,
  // and the prefix `ΟΔΥΣ` must still find Οδυσσέας, whose σ is not final.
  ς: 'σ',
}
const NOT_PLAIN = new RegExp(`[${Object.keys(PLAIN_LETTERS).join('')}]`, 'gu')

/**
 * Characters that show nothing and sit within a word: the soft hyphen (a hyphenation hint a name
 * pasted from a web page may keep), the zero-width non-joiner and joiner, the word joiner and
 * U+FEFF. Splitting at them would make `maximilian` miss Maxi\u00admilian and `milian` find it.
 * The zero-width space (U+200B) is a word break and still splits.
 */
// An alternation, not a class: ESLint reads a joiner in a class as joining its neighbours.
const INVISIBLE_IN_WORD = /\u00ad|\u200c|\u200d|\u2060|\ufeff/g

const ASCII = /^[\u0000-\u007f]*$/

/**
 * The words of a text as they are indexed and searched: lower-cased, accents dropped (José and
 * Jose are one word), letters like ł, ø and ß written plain (PLAIN_LETTERS), characters that show
 * nothing within a word dropped (INVISIBLE_IN_WORD), split at anything else that is not a letter
 * or a digit, each word once.
 */
export function searchWords(text: string | null): string[] {
  const words = new Set<string>()
  addWords(words, text)
  return [...words]
}

/** The words a lead is found by: those of its name and of its email before the @. */
export function leadWords(lead: {contactName: string | null; contactEmail: string | null}): string[] {
  const at = lead.contactEmail?.lastIndexOf('@') ?? -1
  const words = new Set<string>()
  addWords(words, lead.contactName)
  addWords(words, at < 0 ? lead.contactEmail : lead.contactEmail!.slice(0, at))
  return [...words]
}

/** Adds the words of `text` to `words` (a set: each word once, in the order first met). */
function addWords(words: Set<string>, text: string | null): void {
  if (text === null) return
  // Plain ASCII, most names and emails, folds to itself lower-cased: none of the Unicode steps
  // below changes it, so it is read in one pass (a write tokenizes every lead it stores).
  if (ASCII.test(text)) {
    addAsciiWords(words, text)
    return
  }
  const folded = text
    .replace(INVISIBLE_IN_WORD, '')
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(NOT_PLAIN, (letter) => PLAIN_LETTERS[letter]!)
  for (const word of folded.split(/[^\p{L}\p{N}]+/u)) if (word !== '') words.add(withinColumn(word))
}

/** The runs of ASCII letters and digits in `text`, lower-cased: what the Unicode path makes of an ASCII text. */
function addAsciiWords(words: Set<string>, text: string): void {
  let start = -1
  for (let index = 0; index <= text.length; index++) {
    const code = index < text.length ? text.charCodeAt(index) : 0
    const inWord = (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39)
    if (inWord && start < 0) start = index
    else if (!inWord && start >= 0) {
      words.add(withinColumn(text.slice(start, index).toLowerCase()))
      start = -1
    }
  }
}

/** A word cut at what the column holds: NFKD can lengthen one (ligatures); counted in code points, as MySQL counts. */
function withinColumn(word: string): string {
  return word.length <= WORD_MAX_LENGTH ? word : [...word].slice(0, WORD_MAX_LENGTH).join('')
}

/** How a `search` term is matched; null when it has nothing to match on (only punctuation). */
export function parseSearch(term: string): SearchPlan | null {
  // Full-width forms (`＋１ （５５５）`) are read as what they stand for.
  if (PHONE_TERM.test(asciiDigits(term.normalize('NFKC')))) {
    const digits = phoneDigits(term)
    if (digits !== null) return {kind: 'phone', digits, last10: digits.slice(-10)}
  }
  // U+FEFF counts as a space to \s: drop the invisible characters first, as the words were.
  const words = term
    .replace(INVISIBLE_IN_WORD, '')
    .split(/\s+/)
    .filter((word) => word !== '')
  const addresses = [...new Set(words.filter((word) => word.includes('@')).map((word) => normalizeEmail(word)!))]
  const pieces = [...new Set(words.filter((word) => !word.includes('@')).flatMap(searchWords))]
  // A piece that begins another piece of the term adds nothing (`gr grace`).
  const needed = pieces.filter((piece) => !pieces.some((other) => other !== piece && other.startsWith(piece)))
  return needed.length === 0 && addresses.length === 0 ? null : {kind: 'words', pieces: needed, addresses}
}

/**
 * The index range of the strings that start with `prefix`: `>= prefix` and `<` the prefix with
 * its last character raised by one. A range (not LIKE) so SQLite uses the index as MySQL does,
 * and no character of the term needs escaping. Null for `before` when no string bounds the range
 * (a prefix of U+10FFFF only).
 */
export function prefixRange(prefix: string): [from: string, before: string | null] {
  const chars = [...prefix]
  // U+10FFFF cannot be raised: what starts with `x` + U+10FFFF is also what comes before `x` raised.
  while (chars.at(-1) === HIGHEST_CODE_POINT) chars.pop()
  if (chars.length === 0) return [prefix, null]
  const next = chars.pop()!.codePointAt(0)! + 1
  // Past U+D7FF comes U+E000: the surrogate range between is no character and cannot be sent.
  return [prefix, chars.join('') + String.fromCodePoint(next === 0xd800 ? 0xe000 : next)]
}

const HIGHEST_CODE_POINT = String.fromCodePoint(0x10ffff)
