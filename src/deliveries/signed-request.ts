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
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'leads-webhooks/1.0',
    'x-service-signature': signatureFor(secrets.current, timestamp, body),
    'x-service-timestamp': String(timestamp),
    'x-service-delivery': deliveryId,
  }
  if (secrets.previous !== null) headers['x-service-signature-previous'] = signatureFor(secrets.previous, timestamp, body)
  return {url: webhook.url, body, timeoutMs: webhook.timeoutSeconds * 1000, headers}
}

const leadJsonOf = new WeakMap<StoredEvent, string>()

function leadJson(event: StoredEvent): string {
  let json = leadJsonOf.get(event)
  if (json === undefined) leadJsonOf.set(event, (json = JSON.stringify(event.payload)))
  return json
}
