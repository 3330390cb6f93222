import {createHmac, timingSafeEqual} from 'node:crypto'

import type {ReceivedRequest} from './receiver.js'

/**
 * An independent verifier, as a receiver would write it from the spec alone: HMAC-SHA256 of
 * `<timestamp>.<raw body>` keyed with the secret, compared in constant time, with a tolerance.
 * It checks the one signature header named (during a rotation's overlap there are two).
 */
export function verifyDelivery(
  request: ReceivedRequest,
  secret: string,
  now = Date.now(),
  toleranceSeconds = 300,
  header: 'x-service-signature' | 'x-service-signature-previous' = 'x-service-signature',
): boolean {
  const timestamp = String(request.headers['x-service-timestamp'] ?? '')
  const signature = String(request.headers[header] ?? '')
  if (!/^\d+$/.test(timestamp) || !signature.startsWith('sha256=')) return false
  if (Math.abs(now / 1000 - Number(timestamp)) > toleranceSeconds) return false
  const expected = createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`${timestamp}.`), request.rawBody]))
    .digest()
  const given = Buffer.from(signature.slice('sha256='.length), 'hex')
  return given.length === expected.length && timingSafeEqual(given, expected)
}
