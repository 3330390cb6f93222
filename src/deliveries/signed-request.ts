import type {StoredEvent} from '../events/events-store.js'
import {isoTime} from '../shared/clock.js'
import type {SigningSecrets} from '../webhooks/signing-secrets.js'
import type {Webhook} from '../webhooks/webhook-types.js'
import type {SendRequest} from './sender.js'
import {signatureFor} from './signing.js'

/**
 * One attempt's request: the event body with this attempt's `delivered_at`, signed with a fresh
 * timestamp (receivers reject stale ones), and the delivery id that stays the same across attempts.
 * During a rotation's overlap the same material is also signed with the previous secret.
 */
export function signedRequest(webhook: Webhook, secrets: SigningSecrets, event: StoredEvent, deliveryId: string, nowMs: number): SendRequest {
  const timestamp = Math.floor(nowMs / 1000)
  // What JSON.stringify({event, delivered_at, lead}) writes, with the lead written once per event, not once per attempt.
  const body = `{"event":${JSON.stringify(event.type)},"delivered_at":"${isoTime(nowMs)}","lead":${leadJson(event)}}`
  // Named as the spec writes them: the sender keeps a name's case on the wire, and some receivers
  // look headers up by the exact name (API Gateway's REST proxy, PHP's getallheaders()).
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': 'leads-webhooks/1.0',
    'X-Service-Signature': signatureFor(secrets.current, timestamp, body),
    'X-Service-Timestamp': String(timestamp),
    'X-Service-Delivery': deliveryId,
  }
  if (secrets.previous !== null) headers['X-Service-Signature-Previous'] = signatureFor(secrets.previous, timestamp, body)
  return {url: webhook.url, body, timeoutMs: webhook.timeoutSeconds * 1000, headers}
}

const leadJsonOf = new WeakMap<StoredEvent, string>()

function leadJson(event: StoredEvent): string {
  let json = leadJsonOf.get(event)
  if (json === undefined) leadJsonOf.set(event, (json = JSON.stringify(event.payload)))
  return json
}
