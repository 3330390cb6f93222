import {expect} from 'chai'
import {render} from 'ink-testing-library'

import type {TailEntry} from '../../../src/deliveries/delivery-tail.js'
import {SecretOnce} from '../../../src/ui/SecretOnce.js'
import {Table} from '../../../src/ui/Table.js'
import {formatTable} from '../../../src/ui/table-layout.js'
import {countsLine, countTail, NO_COUNTS, TAIL_LINE_WIDTH, tailCells} from '../../../src/ui/tail-line.js'
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
    expect(
      formatTable(columns, [
        {id: 'a1', state: 'active'},
        {id: 'b22222', state: 'revoked'},
      ]),
    ).to.equal('ID      STATE\na1      active\nb22222  revoked')
  })

  it('renders the Ink table with the same alignment', function () {
    const {lastFrame} = render(
      <Table
        columns={columns}
        rows={[
          {id: 'a1', state: 'active'},
          {id: 'b22222', state: 'revoked'},
        ]}
        emptyText="none"
      />,
    )
    expect(
      stripAnsi(lastFrame() ?? '')
        .split('\n')
        .map((line) => line.trimEnd()),
    ).to.deep.equal(['ID      STATE', 'a1      active', 'b22222  revoked'])
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
  it('shows config, how it is sending, health, and each recent delivery with its state, next attempt and attempts', async function () {
    const {WebhookDashboard} = await import('../../../src/ui/WebhookDashboard.js')
    // Its cool-down ends in the future: one that is over reads differently (delivery-state-commands.test.ts).
    const breaker = {state: 'open' as const, until: '2099-11-22T00:01:00.000Z', opened_at: '2026-11-22T00:00:30.000Z'}
    const data: WebhookInspection = {
      webhook: {
        id: 'wh_1',
        customer_id: 'c1',
        url: 'https://hooks.example.com/x',
        event_types: ['lead.created'],
        is_active: false,
        disabled_reason: 'every delivery failed for 5 days',
        timeout_seconds: 10,
        retry_attempts: 5,
        description: null,
        consecutive_failures: 3,
        failing_since: null,
        last_success_at: null,
        last_failure_at: null,
        max_in_flight: 2,
        max_in_flight_override: 2,
        breaker,
        created_at: '2026-11-01T00:00:00.000Z',
        updated_at: '2026-11-01T00:00:00.000Z',
      },
      scheduling: {breaker, in_flight: 1, max_in_flight: 2},
      health: {
        window: 100,
        success_rate: 1 / 3,
        delivered: 1,
        failed: 1,
        failing: 1,
        consecutive_failures: 3,
        last_status: '500',
        last_success_at: null,
        failing_since: null,
      },
      recent: [
        {
          id: 'd1',
          webhook_id: 'wh_1',
          customer_id: 'c1',
          event_id: 'e1',
          status: 'failed',
          state: 'failed',
          attempts_made: 1,
          attempts_since_queued: 1,
          last_error: 'HTTP 500',
          created_at: '2026-11-22T00:00:00.000Z',
          completed_at: null,
          next_attempt_at: null,
          attempts: [
            {attempt: 1, started_at: '2026-11-22T00:00:01.000Z', duration_ms: 12, status_code: 500, error: null, outcome: 'retry', response_snippet: null},
          ],
        },
        {
          id: 'd2',
          webhook_id: 'wh_1',
          customer_id: 'c1',
          event_id: 'e2',
          status: 'pending',
          state: 'held',
          attempts_made: 0,
          attempts_since_queued: 0,
          last_error: null,
          created_at: '2026-11-22T00:00:40.000Z',
          completed_at: null,
          next_attempt_at: '2026-11-22T00:01:00.000Z',
          attempts: [],
        },
      ],
    }
    const frame = stripAnsi(render(<WebhookDashboard data={data} />).lastFrame() ?? '')
    const flat = frame.replace(/\s+/g, ' ')
    expect(frame).to.include('wh_1 disabled: every delivery failed for 5 days')
    expect(flat).to.include(
      'sending breaker open until 2099-11-22T00:01:00.000Z (opened 2026-11-22T00:00:30.000Z), then one probe · 1 of 2 (cap set by an operator) in flight',
    )
    expect(flat).to.include('success 33% of the last 100 deliveries (1 ok, 1 failed, 1 failing now), streak 3')
    expect(frame).to.match(/failed +d1/)
    expect(frame).to.include('#1 2026-11-22T00:00:01.000Z 500 12ms retry')
    expect(frame).to.include('held        d2 2026-11-22T00:00:40.000Z next attempt 2026-11-22T00:01:00.000Z')
  })
})

describe('PullProgress', function () {
  it('shows pages, leads, the rate-limit budget and the position', async function () {
    const {PullProgress} = await import('../../../src/ui/PullProgress.js')
    const progress = {pages: 12, leads: 1200, rateLimit: {limit: 60, remaining: 48, resetSeconds: 30}, position: '2026-11-22T00:00:00.000Z', caughtUp: false}
    expect(stripAnsi(render(<PullProgress progress={progress} />).lastFrame() ?? '')).to.equal(
      'pulling  12 pages · 1,200 leads  rate limit 48/60  at 2026-11-22T00:00:00.000Z',
    )
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
  const delivery = '5f2c9a7e-1b3d-4c8e-9f6a-2d4b8c1e7a90'
  const webhook = 'wh_3b1f0c2d9e8a7f6e5d4c3b2a'
  const common = {delivery_id: delivery, webhook_id: webhook, event_type: 'lead.created', lead_id: 'l1', delivery_status: 'pending' as const}
  const entries: TailEntry[] = [
    {
      ...common,
      at: '2026-11-23T10:00:00.000Z',
      attempt: 0,
      result: 'queued',
      duration_ms: null,
      outcome: 'queued',
      state: 'held',
      next_attempt_at: '2026-11-23T10:05:00.000Z',
    },
    {
      ...common,
      at: '2026-11-23T10:00:00.120Z',
      attempt: 1,
      result: '503',
      duration_ms: 40,
      outcome: 'retry',
      state: 'backing_off',
      next_attempt_at: '2026-11-23T10:00:02.000Z',
    },
    {
      ...common,
      at: '2026-11-23T10:00:01.500Z',
      attempt: 2,
      result: 'no response within the timeout (10000 ms)',
      duration_ms: 10_000,
      outcome: 'retry',
      state: 'delivering',
      next_attempt_at: null,
    },
    {
      ...common,
      at: '2026-11-23T10:00:02.050Z',
      attempt: 3,
      result: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:443',
      duration_ms: 2,
      outcome: 'retry',
      state: 'waiting',
      next_attempt_at: '2026-11-23T10:00:03.000Z',
    },
    {
      ...common,
      at: '2026-11-23T10:00:04.000Z',
      attempt: 4,
      result: '\u001b]0;x\u0007',
      duration_ms: 123_456,
      outcome: 'final',
      state: 'failed',
      next_attempt_at: null,
      delivery_status: 'failed',
    },
  ]

  it('counts deliveries and attempts apart', function () {
    const counts = countTail(NO_COUNTS, [...entries, {...entries[1]!, delivery_id: 'other', attempt: 1, outcome: 'success', state: 'succeeded'}])
    expect(counts).to.deep.equal({queued: 1, succeeded: 1, failed: 1, attempts: 5, retries: 3})
    expect(countsLine(counts)).to.equal('deliveries: 1 queued, 1 succeeded, 1 failed · attempts: 5 (3 retries)')
  })

  it('lays each entry out in fixed columns within 79 characters, ids shortened, the state and next attempt only while the delivery is not ended', function () {
    expect(TAIL_LINE_WIDTH).to.equal(79)
    const lines = entries.map((entry) => tailCells(entry).join(' ').trimEnd())
    expect(lines).to.deep.equal([
      '10:00:00 5f2c9a7e wh_3b1f0c                       queued   held        10:05:00',
      '10:00:00 5f2c9a7e wh_3b1f0c #1  503          40ms retry    backing_off 10:00:02',
      '10:00:01 5f2c9a7e wh_3b1f0c #2  timeout     10.0s retry    delivering',
      '10:00:02 5f2c9a7e wh_3b1f0c #3  ECONNREFU…    2ms retry    waiting',
      '10:00:04 5f2c9a7e wh_3b1f0c #4  ^[]0;x^G     123s final',
    ])
    for (const line of lines) expect(line.length).to.be.at.most(79)
    // A full row, every column at its widest, still fits.
    const widest = tailCells({...entries[1]!, attempt: 11, result: 'x'.repeat(50), duration_ms: 99_999, outcome: 'terminal', state: 'backing_off'}).join(' ')
    expect(widest.length).to.equal(79)
  })

  it('shows what it follows, the counters, the column headers and a line per entry', async function () {
    const {DeliveryTailView} = await import('../../../src/ui/DeliveryTailView.js')
    const counts = countTail(NO_COUNTS, entries)
    const frame = stripAnsi(render(<DeliveryTailView entries={entries} counts={counts} following={`webhook ${webhook}`} />).lastFrame() ?? '')
    const lines = frame.split('\n').map((line) => line.trimEnd())
    expect(lines.slice(0, 3)).to.deep.equal([
      `following webhook ${webhook} (Ctrl-C stops)`,
      'deliveries: 1 queued, 0 succeeded, 1 failed · attempts: 4 (3 retries)',
      'TIME     DELIVERY WEBHOOK   #   ANSWER       TOOK OUTCOME  STATE       NEXT',
    ])
    expect(lines[4]).to.equal('10:00:00 5f2c9a7e wh_3b1f0c #1  503          40ms retry    backing_off 10:00:02')
    expect(lines).to.have.length(3 + entries.length)
  })
})
