import {ValidationError} from './errors.js'

/** A UTF-16 surrogate without its partner: JSON can carry it, UTF-8 cannot store it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
/** C0 control characters other than tab, line feed and carriage return. */
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/
/** Any C0 control character: single-line values (query parameters, names from flags) allow none. */
const CONTROL_IN_LINE = /[\u0000-\u001F]/

/** The string with lone surrogates and control characters replaced by U+FFFD, safe to echo in an error. */
export function printable(value: string): string {
  return value.replace(new RegExp(`${LONE_SURROGATE.source}|${CONTROL_IN_LINE.source}`, 'g'), '\uFFFD')
}

/** Why a string cannot be stored as text, or null when it can. */
export function textProblem(value: string, kind: 'text' | 'line' = 'text'): string | null {
  if (LONE_SURROGATE.test(value)) return 'contains ill-formed Unicode (a lone UTF-16 surrogate)'
  if ((kind === 'line' ? CONTROL_IN_LINE : CONTROL_IN_TEXT).test(value)) {
    return kind === 'line' ? 'contains a control character' : 'contains a control character (only tab and line breaks are allowed)'
  }
  return null
}

/** Throws ValidationError naming `param` when the string cannot be stored as text. */
export function checkText(value: string, param: string, kind: 'text' | 'line' = 'text', what = param): void {
  const problem = textProblem(value, kind)
  if (problem) throw new ValidationError(`${what} ${problem}`, param)
}

/**
 * Checks every key and string value of a parsed JSON document, so no endpoint can store text a
 * database would mangle (SQLite keeps a lone surrogate as invalid UTF-8, MySQL refuses it) or
 * that only looks empty (a NUL-only name). The param is the path to the first bad value.
 */
export function checkJsonText(value: unknown, path = ''): void {
  if (typeof value === 'string') return checkText(value, path || 'body', 'text', path ? `field "${path}"` : 'body')
  if (value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    value.forEach((item, index) => checkJsonText(item, `${path}[${index}]`))
    return
  }
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${printable(key)}` : printable(key)
    checkText(key, at, 'line', `the key of field "${at}"`)
    checkJsonText(item, at)
  }
}
