import {expect} from 'chai'
import {render} from 'ink-testing-library'

import {SecretOnce} from '../../../src/ui/SecretOnce.js'
import {Table} from '../../../src/ui/Table.js'
import {formatTable} from '../../../src/ui/table-layout.js'
import type {WebhookInspection} from '../../../src/webhooks/webhook-report.js'

const stripAnsi = (text: string) => text.replace(/\u001B\[[0-9;]*m/g, '')

interface Row {
  id: string
  state: string
}

const columns = [
  {header: 'ID', value: (row: Row) => row.id},
  {header: 'STATE', value: (row: Row) => row.state, color: (row: Row) => (row.state === 'active' ? 'green' : 'red')},
]

describe('views', function () {
  it('formats an aligned plain-text table', function () {
    expect(formatTable(columns, [{id: 'a1', state: 'active'}, {id: 'b22222', state: 'revoked'}])).to.equal(
      'ID      STATE\na1      active\nb22222  revoked',
    )
  })

  it('renders the Ink table with the same alignment', function () {
    const {lastFrame} = render(<Table columns={columns} rows={[{id: 'a1', state: 'active'}, {id: 'b22222', state: 'revoked'}]} emptyText="none" />)
    expect(stripAnsi(lastFrame() ?? '').split('\n').map((line) => line.trimEnd())).to.deep.equal(['ID      STATE', 'a1      active', 'b22222  revoked'])
  })

  it('renders the empty text for no rows', function () {
    const {lastFrame} = render(<Table columns={columns} rows={[]} emptyText="No keys." />)
    expect(stripAnsi(lastFrame() ?? '')).to.equal('No keys.')
  })

  it('shows a secret once in a box with the warning', function () {
    const {lastFrame} = render(<SecretOnce title="API token" secret="svc_abc" details={[['key id', 'k1']]} />)
    const frame = stripAnsi(lastFrame() ?? '')
    expect(frame).to.include('API token')
    expect(frame).to.include('svc_abc')
    expect(frame).to.include('cannot be shown again')
    expect(frame).to.match(/key id\s+k1/)
    expect(frame).to.include('╭')
  })
})

describe('WebhookDashboard', function () {
  it('shows config, health and each attempt', async function () {
    const {WebhookDashboard} = await import('../../../src/ui/WebhookDashboard.js')
    const data: WebhookInspection = {
      webhook: {
        id: 'wh_1', customer_id: 'c1', url: 'https://hooks.example.com/x', event_types: ['lead.created'], is_active: false,
        disabled_reason: 'every delivery failed for 5 days', timeout_seconds: 10, retry_attempts: 5, description: null,
        consecutive_failures: 3, failing_since: null, last_success_at: null, last_failure_at: null,
        created_at: '2026-11-01T00:00:00.000Z', updated_at: '2026-11-01T00:00:00.000Z',
      },
      health: {window: 100, success_rate: 1 / 3, delivered: 1, failed: 1, failing: 1, consecutive_failures: 3, last_status: '500', last_success_at: null, failing_since: null},
      recent: [
        {
          id: 'd1', webhook_id: 'wh_1', customer_id: 'c1', event_id: 'e1', status: 'failed', attempts_made: 1, last_error: 'HTTP 500',
          created_at: '2026-11-22T00:00:00.000Z', completed_at: null, next_attempt_at: null,
          attempts: [{attempt: 1, started_at: '2026-11-22T00:00:01.000Z', duration_ms: 12, status_code: 500, error: null, outcome: 'retry', response_snippet: null}],
        },
      ],
    }
    const frame = stripAnsi(render(<WebhookDashboard data={data} />).lastFrame() ?? '')
    expect(frame).to.include('wh_1 disabled: every delivery failed for 5 days')
    expect(frame.replace(/\s+/g, ' ')).to.include('success 33% of the last 100 deliveries (1 ok, 1 failed, 1 failing now), streak 3')
    expect(frame).to.match(/failed +d1/)
    expect(frame).to.include('#1 2026-11-22T00:00:01.000Z 500 12ms retry')
  })
})

describe('PullProgress', function () {
  it('shows pages, leads, the rate-limit budget and the position', async function () {
    const {PullProgress} = await import('../../../src/ui/PullProgress.js')
    const progress = {pages: 12, leads: 1200, rateLimit: {limit: 60, remaining: 48, resetSeconds: 30}, position: '2026-11-22T00:00:00.000Z', caughtUp: false}
    expect(stripAnsi(render(<PullProgress progress={progress} />).lastFrame() ?? '')).to.equal('pulling  12 pages · 1,200 leads  rate limit 48/60  at 2026-11-22T00:00:00.000Z')
    const done = stripAnsi(render(<PullProgress progress={{...progress, caughtUp: true, rateLimit: null}} />).lastFrame() ?? '')
    expect(done).to.equal('up to date  12 pages · 1,200 leads  rate limit n/a  at 2026-11-22T00:00:00.000Z')
  })
})

describe('PushProgress', function () {
  it('shows rows, requests and outcomes, and a rate-limit wait', async function () {
    const {PushProgress} = await import('../../../src/ui/PushProgress.js')
    const summary = {received: 1500, created: 1400, updated: 90, skipped: 0, failed: 10, chunks: 3}
    expect(stripAnsi(render(<PushProgress summary={summary} waiting={null} />).lastFrame() ?? '')).to.equal(
      'pushing  1,500 rows · 3 requests  1400 created  90 updated  0 skipped  10 failed',
    )
    const waiting = {reason: 'rate limited' as const, until: Date.now() + 42_000}
    expect(stripAnsi(render(<PushProgress summary={summary} waiting={waiting} />).lastFrame() ?? '')).to.match(/^rate limited, resuming in 42s/)
  })
})

describe('WaitCountdown', function () {
  it('counts a wait down every second', async function () {
    const {PullProgress} = await import('../../../src/ui/PullProgress.js')
    const progress = {pages: 1, leads: 100, rateLimit: null, position: null, caughtUp: false}
    const view = render(<PullProgress progress={progress} waiting={{reason: 'retrying', until: Date.now() + 3000}} />)
    expect(stripAnsi(view.lastFrame() ?? '')).to.match(/^retrying, resuming in 3s/)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    expect(stripAnsi(view.lastFrame() ?? '')).to.match(/^retrying, resuming in 2s/)
    view.unmount()
  })
})

describe('DeliveryTailView', function () {
  it('shows the counters and each delivery and attempt with its answer, latency, outcome and next retry', async function () {
    const {DeliveryTailView, countTail} = await import('../../../src/ui/DeliveryTailView.js')
    const common = {delivery_id: 'd1', webhook_id: 'wh_1', event_type: 'lead.created', lead_id: 'l1', delivery_status: 'pending' as const}
    const entries = [
      {...common, at: '2026-11-23T10:00:00.000Z', attempt: 0, result: 'queued', duration_ms: null, outcome: 'queued', next_attempt_at: null},
      {...common, at: '2026-11-23T10:00:00.120Z', attempt: 1, result: '503', duration_ms: 40, outcome: 'retry', next_attempt_at: '2026-11-23T10:00:02.000Z'},
      {...common, at: '2026-11-23T10:00:02.050Z', attempt: 2, result: '\u001b]0;x\u0007', duration_ms: 12, outcome: 'final', next_attempt_at: null},
    ]
    const counts = countTail({queued: 0, delivered: 0, retrying: 0, failed: 0}, entries)
    expect(counts).to.deep.equal({queued: 1, delivered: 0, retrying: 1, failed: 1})
    const frame = stripAnsi(render(<DeliveryTailView entries={entries} counts={counts} following="webhook wh_1" />).lastFrame() ?? '')
    const lines = frame.split('\n')
    expect(lines[0]).to.equal('following webhook wh_1 · 1 queued · 0 delivered · 1 to retry · 1 failed (Ctrl-C stops)')
    expect(lines[1]).to.equal('10:00:00.000 d1 lead.created lead l1 queued queued')
    expect(lines[2]).to.equal('10:00:00.120 d1 lead.created lead l1 #1 503 40ms retry next 10:00:02')
    expect(lines[3]).to.equal('10:00:02.050 d1 lead.created lead l1 #2 ^[]0;x^G 12ms final')
  })
})
