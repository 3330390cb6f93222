import {BREAKER_COLORS, DELIVERY_STATE_COLORS, DELIVERY_STATUS_COLORS} from '../../src/ui/colors.js'
import type {Column} from '../../src/ui/render.js'
import type {DeliveryReport, WebhookReport} from '../../src/webhooks/webhook-report.js'

export const WEBHOOK_COLUMNS: ReadonlyArray<Column<WebhookReport>> = [
  {header: 'ID', kind: 'id', value: (w) => w.id},
  {header: 'CUSTOMER', kind: 'id', value: (w) => w.customer_id},
  {header: 'URL', value: (w) => w.url},
  {header: 'STATE', kind: 'short', value: (w) => (w.is_active ? 'active' : 'disabled'), color: (w) => (w.is_active ? 'green' : 'red')},
  {header: 'BREAKER', kind: 'short', value: (w) => w.breaker.state, color: (w) => BREAKER_COLORS[w.breaker.state]},
  {header: 'MAX IN FLIGHT', kind: 'short', value: (w) => (w.max_in_flight_override === null ? `${w.max_in_flight} (default)` : String(w.max_in_flight))},
  {header: 'FAILURES', kind: 'short', value: (w) => String(w.consecutive_failures), color: (w) => (w.consecutive_failures > 0 ? 'yellow' : undefined)},
  {header: 'LAST SUCCESS', kind: 'time', value: (w) => w.last_success_at ?? 'never'},
]

export const DELIVERY_COLUMNS: ReadonlyArray<Column<DeliveryReport>> = [
  {header: 'ID', kind: 'id', value: (d) => d.id},
  {header: 'WEBHOOK', kind: 'id', value: (d) => d.webhook_id},
  {header: 'STATUS', kind: 'short', value: (d) => d.status, color: (d) => DELIVERY_STATUS_COLORS[d.status]},
  {header: 'STATE', kind: 'short', value: (d) => d.state, color: (d) => DELIVERY_STATE_COLORS[d.state]},
  {header: 'ATTEMPTS', kind: 'short', value: (d) => String(d.attempts.length)},
  {header: 'CREATED', kind: 'time', value: (d) => d.created_at},
  {header: 'LAST ERROR', value: (d) => d.last_error ?? '-'},
]
