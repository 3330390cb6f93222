import {ValidationError} from './errors.js'

/** A UTF-16 surrogate without its partner: JSON can carry it, UTF-8 cannot store it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
/** C0 control characters other than tab, line feed and carriage return. */
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/
/** Any C0 control character: single-line values (query parameters, names from flags) allow none. */
const CONTROL_IN_LINE = /[\u0000-\u001F]/
/**
 * The text rule of request bodies as JSON Schema patterns, for the API document: no C0 control
 * character but tab, line feed and carriage return (none at all in a key), no lone surrogate (in
 * a pattern's Unicode mode a lone surrogate is a code point of its own, a pair is not).
 */
export const TEXT_PATTERN = '^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uD800-\\uDFFF]*$'
export const LINE_PATTERN = '^[^\\u0000-\\u001F\\uD800-\\uDFFF]*$'
export const TEXT_RULE =
  'Text: well-formed Unicode without C0 control characters other than tab, line feed and carriage return (none at all in keys); otherwise 400 naming the path of the value.'
/** Cheap first look: most strings hold neither controls nor surrogates and need no closer check. */
const SUSPECT = /[\u0000-\u001F\uD800-\uDFFF]/
const UNPRINTABLE = new RegExp(`${LONE_SURROGATE.source}|${CONTROL_IN_LINE.source}`, 'g')

/** The string with lone surrogates and control characters replaced by U+FFFD, safe to echo in an error. */
export function printable(value: string): string {
  return value.replace(UNPRINTABLE, '\uFFFD')
}

/** Why a string cannot be stored as text, or null when it can. */
export function textProblem(value: string, kind: 'text' | 'line' = 'text'): string | null {
  if (!SUSPECT.test(value)) return null
  if (LONE_SURROGATE.test(value)) return 'contains ill-formed Unicode (a lone UTF-16 surrogate)'
  if ((kind === 'line' ? CONTROL_IN_LINE : CONTROL_IN_TEXT).test(value)) {
    return kind === 'line' ? 'contains a control character' : 'contains a control character (only tab and line breaks are allowed)'
  }
  return null
}

/**
 * How deeply arrays and objects may nest in a request body. A bulk body needs four levels (body,
 * `leads`, row, `custom_fields`); a deeper one is refused before anything walks it recursively
 * (this check, the schemas, the Idempotency-Key fingerprint), which a body nested 100,000 deep
 * would take past the end of the stack.
 */
const MAX_JSON_DEPTH = 32

/**
 * Checks that a parsed JSON document nests no deeper than MAX_JSON_DEPTH, and every key and string
 * value in it, so no endpoint can store text a database would mangle (SQLite keeps a lone
 * surrogate as invalid UTF-8, MySQL refuses it) or that only looks empty (a NUL-only name). The
 * param is the path to the first bad value. The path is only built for a bad value: a 500-row
 * bulk body is checked in well under a millisecond. The text under the top-level key `checkedApart`
 * is left to the endpoint's own check (the nesting is not): a bulk's rows, each failing alone, and
 * a lead's custom fields, whose unknown ones are dropped whatever they hold (readLeadDraft).
 */
export function checkJsonText(document: unknown, checkedApart?: string): void {
  const found = firstBadText(document, 0, checkedApart)
  if (!found) return
  const path = found.path.map((step, index) => (typeof step === 'number' ? `[${step}]` : `${index === 0 ? '' : '.'}${printable(step)}`)).join('')
  if (found.inKey) throw new ValidationError(`the key of field "${path}" ${found.problem}`, path)
  throw new ValidationError(path ? `field "${path}" ${found.problem}` : `body ${found.problem}`, path || 'body')
}

interface BadText {
  path: Array<string | number>
  problem: string
  inKey: boolean
}

/** `checkedApart` is given at the top level only; `textToo` is false under it. */
function firstBadText(value: unknown, depth: number, checkedApart?: string, textToo = true): BadText | null {
  if (typeof value === 'string') {
    const problem = textToo ? textProblem(value, 'text') : null
    return problem ? {path: [], problem, inKey: false} : null
  }
  if (value === null || typeof value !== 'object') return null
  if (depth === MAX_JSON_DEPTH) throw new ValidationError(`Request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`, 'body')
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = firstBadText(value[index], depth + 1, undefined, textToo)
      if (found) return {...found, path: [index, ...found.path]}
    }
    return null
  }
  for (const key in value) {
    const keyProblem = textToo ? textProblem(key, 'line') : null
    if (keyProblem) return {path: [key], problem: keyProblem, inKey: true}
    const found = firstBadText((value as Record<string, unknown>)[key], depth + 1, undefined, textToo && key !== checkedApart)
    if (found) return {...found, path: [key, ...found.path]}
  }
  return null
}

/**
 * A URL (or host list entry) as an error may repeat it: without the user and password before its
 * `@`. Also when the scheme was forgotten (`user:password@host`), which a URL parser reads as the
 * scheme `user:` and whose password it therefore never puts in a password field.
 */
export function withoutCredentials(raw: string): string {
  const at = raw.lastIndexOf('@')
  if (at === -1) return raw
  const scheme = /^[a-z][a-z\d+.-]*:\/\//i.exec(raw)?.[0] ?? ''
  return scheme + raw.slice(at + 1)
}
