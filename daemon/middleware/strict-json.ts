import Bourne from '@hapi/bourne'

import {ValidationError} from '../../src/shared/errors.js'

/** JSON texts are UTF-8 (RFC 8259, 8.1). Fatal: a byte that is not UTF-8 is refused, never replaced by U+FFFD. */
const UTF8 = new TextDecoder('utf-8', {fatal: true})

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
  let parsed: unknown
  try {
    // Bourne: JSON.parse, then a refusal of any `__proto__` key (a prototype pollution gadget).
    parsed = Bourne.parse(text, {protoAction: 'error'}) as unknown
  } catch (error) {
    if (/forbidden prototype property/.test((error as Error).message)) {
      throw new ValidationError('Request body must not contain the key "__proto__".', '__proto__')
    }
    // Answered by the error middleware's envelope for a 400 from the body parser.
    throw Object.assign(new Error('invalid JSON'), {status: 400})
  }
  // Valid JSON, but a scalar (null, a number, a string) or an array is no endpoint's body.
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ValidationError('Request body must be a JSON object.', 'body')
  return parsed
}
