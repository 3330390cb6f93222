import {BREAKER_COLORS, DELIVERY_STATE_COLORS, DELIVERY_STATUS_COLORS} from '../../src/ui/colors.js'
import type {Column} from '../../src/ui/render.js'
import {commonStart} from '../../src/ui/table-layout.js'
import type {DeliveryReport, WebhookReport} from '../../src/webhooks/webhook-report.js'

/**
 * The columns of `leads webhooks list`, ranked for a narrow terminal: id, state and failure
 * streak first, then as much of the URL as tells the webhooks apart (its common start left out,
 * cut in the middle). Without the customer column when every webhook is one customer's.
 */
export function webhookColumns(options: {oneCustomer: boolean}): Array<Column<WebhookReport>> {
  const columns: Array<Column<WebhookReport> | null> = [
    {header: 'ID', kind: 'id', rank: 0, value: (w) => w.id},
    {header: 'STATE', kind: 'short', rank: 1, value: (w) => (w.is_active ? 'active' : 'disabled'), color: (w) => (w.is_active ? 'green' : 'red')},
    {
      header: 'FAILURES',
      kind: 'short',
      rank: 2,
      value: (w) => String(w.consecutive_failures),
      color: (w) => (w.consecutive_failures > 0 ? 'yellow' : undefined),
    },
    {header: 'URL', rank: 3, minWidth: 24, cutAt: 'middle', value: (w) => w.url, shorten: shortenUrls},
    {header: 'BREAKER', kind: 'short', rank: 4, value: (w) => w.breaker.state, color: (w) => BREAKER_COLORS[w.breaker.state]},
    options.oneCustomer ? null : {header: 'CUSTOMER', kind: 'id', rank: 5, value: (w) => w.customer_id},
    {header: 'LAST SUCCESS', kind: 'time', rank: 6, value: (w) => w.last_success_at ?? 'never'},
    {
      header: 'MAX IN FLIGHT',
      kind: 'short',
      rank: 7,
      value: (w) => (w.max_in_flight_override === null ? `${w.max_in_flight} (default)` : String(w.max_in_flight)),
    },
  ]
  return columns.filter((column) => column !== null)
}

/** URLs for a terminal: without the start several share up to a `/` (at least the https:// every one has). */
function shortenUrls(urls: readonly string[]): {values: string[]; note: string} | null {
  const shared = urls.length > 1 ? commonStart(urls, '/') : ''
  const start = shared.length > 'https://'.length ? shared : urls.every((url) => url.startsWith('https://')) ? 'https://' : ''
  if (start === '') return null
  return {values: urls.map((url) => url.slice(start.length)), note: `URL: ${start} left out (common to all)`}
}

export const DELIVERY_COLUMNS: ReadonlyArray<Column<DeliveryReport>> = [
  {header: 'ID', kind: 'id', value: (d) => d.id},
  {header: 'WEBHOOK', kind: 'id', value: (d) => d.webhook_id},
  {header: 'STATUS', kind: 'short', value: (d) => d.status, color: (d) => DELIVERY_STATUS_COLORS[d.status]},
  {header: 'STATE', kind: 'short', value: (d) => d.state, color: (d) => DELIVERY_STATE_COLORS[d.state]},
  {header: 'ATTEMPTS', kind: 'short', value: (d) => String(d.attempts.length)},
  {header: 'CREATED', kind: 'time', value: (d) => d.created_at},
  {header: 'LAST ERROR', value: (d) => d.last_error ?? '-'},
]
