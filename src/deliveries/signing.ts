import {createHmac} from 'node:crypto'

/**
 * The X-Service-Signature value: HMAC-SHA256 over `<timestamp>.<raw body>`, keyed with the
 * whole secret string (`svc_whsec_…`) as UTF-8 bytes.
 */
export function signatureFor(secret: string, timestampSeconds: number, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestampSeconds}.${rawBody}`, 'utf8').digest('hex')}`
}
