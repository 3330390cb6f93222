import {createHmac, timingSafeEqual} from 'node:crypto'

/** How far X-Service-Timestamp may be from this server's clock, in seconds. */
export const TOLERANCE_SECONDS = 300

/**
 * True when a leads webhook request was signed with `secret` (the whole `svc_whsec_...` string)
 * less than TOLERANCE_SECONDS ago. `rawBody` is the request body exactly as received, never
 * JSON parsed and serialised again; `headers` are Node's (lower-case names).
 *
 * X-Service-Signature is made with the webhook's current secret. For 24 hours after a rotation,
 * X-Service-Signature-Previous is made with the secret the rotation replaced, so a receiver still
 * configured with that one keeps accepting deliveries until it is given the new one.
 */
export function verifyWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>, secret: string, nowMs = Date.now()): boolean {
  const timestamp = headers['x-service-timestamp']
  if (typeof timestamp !== 'string' || !/^[0-9]+$/.test(timestamp)) return false
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')}`)
  return ['x-service-signature', 'x-service-signature-previous'].some((name) => {
    const given = headers[name]
    if (typeof given !== 'string') return false
    const bytes = Buffer.from(given)
    return bytes.length === expected.length && timingSafeEqual(bytes, expected)
  })
}
