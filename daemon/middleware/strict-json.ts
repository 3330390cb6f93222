import {ValidationError} from '../../src/shared/errors.js'

/** JSON texts are UTF-8 (RFC 8259, 8.1). Fatal: a byte that is not UTF-8 is refused, never replaced by U+FFFD. */
const UTF8 = new TextDecoder('utf-8', {fatal: true})

/** A body must be an object or an array (strict JSON, as co-body's strict mode had it). */
const OBJECT_OR_ARRAY = /^[\x20\x09\x0a\x0d]*[[{]/

/** A `__proto__` key, escaped or not (as @hapi/bourne looks for it): only then is the parsed body scanned. */
const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/

/**
 * The body of a request read byte for byte (each byte one latin1 character), decoded as UTF-8 and
 * parsed. Bytes that are not UTF-8 are a 400: decoding them leniently would store U+FFFD in place
 * of what the client sent (a Latin-1 "José" would become "Jos\uFFFD" with a 201). A leading byte
 * order mark is dropped (RFC 8259 lets a parser ignore it); an empty body is `{}`.
 */
export function parseJsonBytes(bytes: string): unknown {
  let text: string
  try {
    text = UTF8.decode(Buffer.from(bytes, 'latin1'))
  } catch {
    throw new ValidationError('Request body is not valid UTF-8; send JSON encoded as UTF-8.', 'body')
  }
  if (text === '') return {}
  if (!OBJECT_OR_ARRAY.test(text)) throw new ValidationError('Request body must be a JSON object.', 'body')
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    // Answered by the error middleware's envelope for a 400 from the body parser.
    throw Object.assign(new Error('invalid JSON'), {status: 400})
  }
  if (PROTO_KEY.test(text) && hasProtoKey(parsed)) {
    throw new ValidationError('Request body must not contain the key "__proto__".', '__proto__')
  }
  return parsed
}

/** Whether any object in the document has an own `__proto__` key; iterative, as a body may nest deep. */
function hasProtoKey(document: unknown): boolean {
  const pending: unknown[] = [document]
  while (pending.length > 0) {
    const value = pending.pop()
    if (value === null || typeof value !== 'object') continue
    if (Object.prototype.hasOwnProperty.call(value, '__proto__')) return true
    for (const child of Object.values(value)) pending.push(child)
  }
  return false
}
