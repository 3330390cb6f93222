/**
 * Text from outside (a customer's webhook description, a receiver's answer, an API error) made
 * inert before a terminal shows it. Escape sequences in such text could set the window title,
 * write the clipboard (OSC 52), move the cursor over earlier output or hide what follows.
 */

/** C0 controls, DEL and C1 controls: every code a terminal may act on. */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g

/** Bidirectional overrides and isolates, which reorder what the reader sees (Trojan Source). */
const BIDI = /[\u202a-\u202e\u2066-\u2069]/g

/**
 * Shows controls the way `cat -v` does (ESC as `^[`, DEL as `^?`, C1 as `M-^[`…) and bidi
 * controls as `<U+202E>`, so nothing reaches the terminal that it would interpret, and the
 * reader still sees that something was there. Tabs and line breaks are controls too: a table
 * cell or a one-line field must stay on its line.
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROLS, caretNotation).replace(BIDI, (char) => `<U+${char.codePointAt(0)!.toString(16).toUpperCase()}>`)
}

/** Multi-line text (a response body) made safe line by line: line breaks kept, every other control shown. */
export function terminalSafeLines(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => terminalSafe(line))
    .join('\n')
}

/**
 * JSON text with the characters JSON.stringify leaves raw but a terminal acts on (DEL, C1, bidi
 * controls) written as \u escapes: the same JSON once parsed.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(/[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function caretNotation(char: string): string {
  const code = char.charCodeAt(0)
  if (code === 0x7f) return '^?'
  if (code >= 0x80) return `M-${caretNotation(String.fromCharCode(code - 0x80))}`
  return `^${String.fromCharCode(code + 0x40)}`
}

/** A report with every string in it made safe (terminalSafe), for a view that prints what it holds. */
export function inert<T>(value: T): T {
  if (typeof value === 'string') return terminalSafe(value) as T
  if (Array.isArray(value)) return value.map((item) => inert(item)) as T
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, inert(item)])) as T
  return value
}
