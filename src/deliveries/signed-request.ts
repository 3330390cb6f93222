import type {StoredEvent} from '../events/events-store.js'
import {isoTime} from '../shared/clock.js'
import type {Webhook} from '../webhooks/webhook-types.js'
import type {SendRequest} from './sender.js'
import {signatureFor} from './signing.js'

/**
 * One attempt's request: the event body with this attempt's `delivered_at`, signed with a fresh
 * timestamp (receivers reject stale ones), and the delivery id that stays the same across attempts.
 */
export function signedRequest(webhook: Webhook, secret: string, event: StoredEvent, deliveryId: string, nowMs: number): SendRequest {
  const timestamp = Math.floor(nowMs / 1000)
  const body = JSON.stringify({event: event.type, delivered_at: isoTime(nowMs), lead: event.payload})
  return {
    url: webhook.url,
    body,
    timeoutMs: webhook.timeoutSeconds * 1000,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'leads-webhooks/1.0',
      'x-service-signature': signatureFor(secret, timestamp, body),
      'x-service-timestamp': String(timestamp),
      'x-service-delivery': deliveryId,
    },
  }
}
