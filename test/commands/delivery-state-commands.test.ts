import {type ChildProcessWithoutNullStreams, spawn} from 'node:child_process'
import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {eventToRow} from '../../src/events/events-store.js'
import type {Db} from '../../src/db/knex.js'
import type {Services} from '../../src/services.js'
import {DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT_LIMIT, type Webhook} from '../../src/webhooks/webhook-types.js'
import {forEachBackend} from '../helpers/backends.js'
import {CLI, runCli, runCliAtWidth, runCliJson, startCliAtTerminal} from '../helpers/cli.js'
import {openServices} from '../helpers/fixtures.js'
import {openTestDb} from '../helpers/test-db.js'

const publicLookup = async () => [{address: '93.184.216.34', family: 4 as const}]
const iso = (ms: number) => new Date(ms).toISOString()

/** Every line `deliveries show` writes above the payload (the lead's JSON, as sent) within 80 columns. */
function expectWithin80Columns(stdout: string): void {
  for (const line of stdout.slice(0, stdout.indexOf('payload (lead):')).split('\n')) expect(line.length, line).to.be.at.most(80)
}
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007|\u001b[()][A-Z0-9]|\u001b[=>78]/g

interface DeliverySetup {
  status?: 'pending' | 'delivering' | 'succeeded' | 'failed'
  attemptsMade?: number
  nextAttemptAt?: number
  /** Finished attempts, numbered from 1. */
  attempts?: Array<{statusCode: number | null; error?: string; outcome: 'success' | 'retry' | 'final'}>
  /** An attempt on the wire now: the webhook's in-flight record holds a slot for the delivery. */
  onTheWire?: boolean
}

/**
 * Where a delivery stands as operators see it (`deliveries show`, `webhooks inspect`, `deliveries
 * tail`) and the operator's in-flight cap (`webhooks limit`). Each state is set up in the database
 * as the worker leaves it; no worker runs here, so nothing moves on by itself.
 */
describe('delivery state commands', function () {
  forEachBackend((backend) => {
    let db: Db
    let services: Services
    let env: Record<string, string>
    let customerId: string

    before(async function () {
      env = {...backend.env, LEADS_MASTER_KEY: 'ab'.repeat(32)}
      db = openTestDb(backend)
      services = await openServices(backend, {db, lookup: publicLookup})
    })
    beforeEach(async function () {
      customerId = (await services.customers.create({name: 'Delivery state test'})).id
    })
    after(async function () {
      await services.close()
      await db.destroy()
    })

    const newWebhook = async (): Promise<Webhook> =>
      (await services.webhooks.create(customerId, {url: 'https://hooks.example.com/in', event_types: ['lead.created']})).webhook

    /** A delivery of a lead.created event, written as the outbox and the worker would leave it. */
    async function addDelivery(webhook: Webhook, setup: DeliverySetup = {}): Promise<string> {
      const now = Date.now()
      const event = {id: randomUUID(), customerId, type: 'lead.created', leadId: randomUUID(), payload: {contact_name: 'State'}, createdAt: now}
      const id = randomUUID()
      const attempts = setup.attempts ?? []
      await db('events').insert(eventToRow(event))
      await db('deliveries').insert({
        id,
        customer_id: customerId,
        webhook_id: webhook.id,
        event_id: event.id,
        status: setup.status ?? 'pending',
        attempts_made: setup.attemptsMade ?? attempts.length,
        next_attempt_at: setup.nextAttemptAt ?? now,
        dispatched_at: now,
        created_at: now,
        updated_at: now,
        completed_at: setup.status === 'succeeded' || setup.status === 'failed' ? now : null,
      })
      if (attempts.length > 0) {
        await db('delivery_attempts').insert(
          attempts.map((attempt, index) => ({
            id: randomUUID(),
            delivery_id: id,
            attempt_number: index + 1,
            started_at: now,
            duration_ms: 40,
            status_code: attempt.statusCode,
            error: attempt.error ?? null,
            response_snippet: null,
            outcome: attempt.outcome,
          })),
        )
      }
      // As a worker takes its slot: in Redis where there is one (so the commands must read it there), else the database.
      if (setup.onTheWire)
        expect(await services.inFlight.exchange({customerId, id: webhook.id}, DEFAULT_MAX_IN_FLIGHT, [], [id], now + 60_000, now)).to.deep.equal([id])
      return id
    }

    async function openBreaker(webhook: Webhook, until: number, openedAt: number): Promise<void> {
      await db('webhooks').where({customer_id: customerId, id: webhook.id}).update({breaker_state: 'open', breaker_until: until, breaker_opened_at: openedAt})
    }

    describe('deliveries show', function () {
      it('reports each state with the true next attempt, and the webhook it waits on', async function () {
        const webhook = await newWebhook()
        const retryAt = Date.now() + 60_000
        const waiting = await addDelivery(webhook, {nextAttemptAt: Date.now() - 1000})
        const backingOff = await addDelivery(webhook, {attempts: [{statusCode: 503, outcome: 'retry'}], nextAttemptAt: retryAt})
        const delivering = await addDelivery(webhook, {status: 'delivering', onTheWire: true})
        const succeeded = await addDelivery(webhook, {status: 'succeeded', attempts: [{statusCode: 200, outcome: 'success'}]})
        const before = Date.now()

        const shown = async (id: string) => runCliJson(['deliveries', 'show', id], env)
        const waitingShown = await shown(waiting)
        expect(waitingShown).to.include({status: 'pending', state: 'waiting'})
        // Due already: its next attempt is as soon as it gets its turn, now.
        expect(Date.parse(waitingShown.next_attempt_at)).to.be.at.least(before)
        expect(waitingShown.webhook_scheduling).to.deep.equal({
          breaker: {state: 'closed', until: null, opened_at: null},
          in_flight: 1,
          max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        })
        expect(await shown(backingOff)).to.include({status: 'pending', state: 'backing_off', next_attempt_at: iso(retryAt)})
        expect(await shown(delivering)).to.include({status: 'delivering', state: 'delivering', next_attempt_at: null})
        expect(await shown(succeeded)).to.include({status: 'succeeded', state: 'succeeded', next_attempt_at: null})

        const text = await runCli(['deliveries', 'show', backingOff], env)
        expect(text.code, text.stderr).to.equal(0)
        expect(text.stdout).to.include(
          [
            `state:        backing_off (an attempt failed; the next one is scheduled)`,
            `next attempt: ${iso(retryAt)}`,
            `webhook:      ${webhook.id}`,
            `breaker:      closed`,
            `in flight:    1 of ${DEFAULT_MAX_IN_FLIGHT}`,
          ].join('\n'),
        )
        expectWithin80Columns(text.stdout)
      })

      it("says a delivery is held while its webhook's breaker is open, until the probe", async function () {
        const webhook = await newWebhook()
        const probeAt = Date.now() + 120_000
        const openedAt = Date.now() - 5000
        const held = await addDelivery(webhook, {nextAttemptAt: Date.now() - 1000})
        await openBreaker(webhook, probeAt, openedAt)

        const json = await runCliJson(['deliveries', 'show', held], env)
        expect(json).to.include({status: 'pending', state: 'held', next_attempt_at: iso(probeAt)})
        expect(json.webhook_scheduling.breaker).to.deep.equal({state: 'open', until: iso(probeAt), opened_at: iso(openedAt)})
        const text = await runCli(['deliveries', 'show', held], env)
        // The longest state and breaker, wrapped to fit 80 columns under their labels.
        expect(text.stdout).to.include(
          [
            `state:        held (its webhook's circuit breaker is open: nothing is sent until`,
            `              the probe)`,
            `next attempt: ${iso(probeAt)}`,
            `webhook:      ${webhook.id}`,
            `breaker:      open until ${iso(probeAt)} (opened`,
            `              ${iso(openedAt)}), then one probe`,
            `in flight:    0 of ${DEFAULT_MAX_IN_FLIGHT}`,
          ].join('\n'),
        )
        expectWithin80Columns(text.stdout)
      })
    })

    describe('webhooks inspect and list, deliveries list', function () {
      it('show the breaker and until when, the deliveries in flight out of the cap, and each recent delivery with its state and next attempt', async function () {
        const webhook = await newWebhook()
        const retryAt = Date.now() + 60_000
        const probeAt = Date.now() + 120_000
        const openedAt = Date.now() - 5000
        const backingOff = await addDelivery(webhook, {attempts: [{statusCode: 500, outcome: 'retry'}], nextAttemptAt: retryAt})
        const delivering = await addDelivery(webhook, {status: 'delivering', onTheWire: true})
        const held = await addDelivery(webhook)
        await openBreaker(webhook, probeAt, openedAt)

        const inspected = await runCliJson(['webhooks', 'inspect', webhook.id], env)
        // `show`, the word deliveries uses, is the same command.
        expect(await runCliJson(['webhooks', 'show', webhook.id], env)).to.deep.equal(inspected)
        expect(inspected.scheduling).to.deep.equal({
          breaker: {state: 'open', until: iso(probeAt), opened_at: iso(openedAt)},
          in_flight: 1,
          max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        })
        expect(inspected.webhook).to.include({max_in_flight: DEFAULT_MAX_IN_FLIGHT, max_in_flight_override: null})
        const recent = new Map(inspected.recent.map((d: {id: string; state: string; next_attempt_at: string | null}) => [d.id, [d.state, d.next_attempt_at]]))
        expect(Object.fromEntries(recent)).to.deep.equal({
          [backingOff]: ['backing_off', iso(retryAt)],
          [delivering]: ['delivering', null],
          [held]: ['held', iso(probeAt)],
        })

        const text = await runCli(['webhooks', 'inspect', webhook.id], env)
        expect(text.code, text.stderr).to.equal(0)
        expect(text.stdout).to.include(
          `sending:   breaker open until ${iso(probeAt)} (opened ${iso(openedAt)}), then one probe · 1 of ${DEFAULT_MAX_IN_FLIGHT} (default cap) in flight\n`,
        )
        expect(text.stdout).to.match(new RegExp(`\\n  backing_off ${backingOff} \\S+  next attempt ${iso(retryAt)}\\n    #1 \\S+ 500 40ms retry\\n`))
        expect(text.stdout).to.match(new RegExp(`\\n  delivering  ${delivering} \\S+\\n`))
        expect(text.stdout).to.match(new RegExp(`\\n  held        ${held} \\S+  next attempt ${iso(probeAt)}\\n`))

        const dashboard = (await runCliAtWidth(['webhooks', 'inspect', webhook.id], env, 120)).stdout.replace(ANSI, '').replace(/[\s│╭╮╰╯─]+/g, ' ')
        expect(dashboard).to.include(
          `sending breaker open until ${iso(probeAt)} (opened ${iso(openedAt)}), then one probe · 1 of ${DEFAULT_MAX_IN_FLIGHT} (default cap) in flight`,
        )
        expect(dashboard).to.include(`backing_off ${backingOff} `)
        expect(dashboard).to.include(`held ${held} `)

        const deliveries = await runCliJson(['deliveries', 'list', '--webhook', webhook.id], env)
        expect(Object.fromEntries(deliveries.deliveries.map((d: {id: string; state: string}) => [d.id, d.state]))).to.deep.equal({
          [backingOff]: 'backing_off',
          [delivering]: 'delivering',
          [held]: 'held',
        })
        const rows = await runCli(['deliveries', 'list', '--webhook', webhook.id, '--columns', 'id,status,state'], env)
        expect(rows.stdout.split('\n').filter(Boolean).sort()).to.deep.equal(
          [`${backingOff}\tpending\tbacking_off`, `${delivering}\tdelivering\tdelivering`, `${held}\tpending\theld`].sort(),
        )

        const listed = await runCliJson(['webhooks', 'list', '--customer', customerId], env)
        expect(listed.webhooks[0]).to.include({id: webhook.id, max_in_flight: DEFAULT_MAX_IN_FLIGHT, max_in_flight_override: null})
        expect(listed.webhooks[0].breaker).to.deep.equal({state: 'open', until: iso(probeAt), opened_at: iso(openedAt)})
        const piped = await runCli(['webhooks', 'list', '--customer', customerId, '--columns', 'id,breaker,max-in-flight'], env)
        expect(piped.stdout).to.equal(`${webhook.id}\topen\t${DEFAULT_MAX_IN_FLIGHT} (default)\n`)
      })

      it("says the next delivery is the probe once the breaker's cool-down is over, not a time already past", async function () {
        const webhook = await newWebhook()
        const cooledAt = Date.now() - 1000
        const openedAt = Date.now() - 60_000
        await addDelivery(webhook, {nextAttemptAt: Date.now() - 1000})
        await openBreaker(webhook, cooledAt, openedAt)

        const text = await runCli(['webhooks', 'inspect', webhook.id], env)
        expect(text.code, text.stderr).to.equal(0)
        expect(text.stdout).to.include(`sending:   breaker open (opened ${iso(openedAt)}), cool-down over: the next delivery is the probe · 0 of `)
        expect(text.stdout).to.not.include(iso(cooledAt))
        const dashboard = (await runCliAtWidth(['webhooks', 'inspect', webhook.id], env, 120)).stdout.replace(ANSI, '').replace(/[\s│╭╮╰╯─]+/g, ' ')
        expect(dashboard).to.include('cool-down over: the next delivery is the probe')
      })

      it("lists a deleted webhook's cancelled deliveries by its id, and refuses only an id with neither webhook nor deliveries", async function () {
        const webhook = await newWebhook()
        const cancelled = await addDelivery(webhook)
        await services.webhooks.deleteById(webhook.id)

        const listed = await runCliJson(['deliveries', 'list', '--webhook', webhook.id], env)
        expect(listed.deliveries.map((d: {id: string; status: string}) => [d.id, d.status])).to.deep.equal([[cancelled, 'cancelled']])
        const failed = await runCli(['deliveries', 'list', '--webhook', webhook.id, '--status', 'failed'], env)
        expect(failed.code, failed.stderr).to.equal(0)
        expect(failed.stdout + failed.stderr).to.equal('No deliveries.\n')
        const unknown = await runCli(['deliveries', 'list', '--webhook', 'wh_nope'], env)
        expect(unknown.code).to.equal(1)
        expect(unknown.stderr).to.equal('Error: webhook wh_nope does not exist (hint: run `leads webhooks list`)\n')
      })
    })

    describe('deliveries list --cursor', function () {
      it('pages to older deliveries with next_cursor, as the API pages its lists, and refuses a cursor of other filters', async function () {
        const webhook = await newWebhook()
        const ids: string[] = []
        for (let i = 0; i < 5; i++) ids.push(await addDelivery(webhook, {status: 'failed', attempts: [{statusCode: 500, outcome: 'final'}]}))
        // Three share one created_at: the page boundary must fall between deliveries of the same millisecond too.
        const at = Date.now() - 60_000
        await db('deliveries').where({customer_id: customerId}).whereIn('id', ids.slice(1, 4)).update({created_at: at})
        const all = (await runCliJson(['deliveries', 'list', '--webhook', webhook.id, '--limit', '1000'], env)) as {
          deliveries: Array<{id: string}>
          next_cursor: string | null
        }
        expect(all.next_cursor).to.equal(null)
        expect(all.deliveries.map((d) => d.id).sort()).to.deep.equal([...ids].sort())

        const paged: string[] = []
        const cursors: string[] = []
        let cursor: string | null = null
        do {
          const page = (await runCliJson(['deliveries', 'list', '--webhook', webhook.id, '--limit', '2', ...(cursor ? ['--cursor', cursor] : [])], env)) as {
            deliveries: Array<{id: string}>
            next_cursor: string | null
          }
          expect(page.deliveries.length).to.be.within(1, 2)
          paged.push(...page.deliveries.map((d) => d.id))
          cursor = page.next_cursor
          if (cursor) cursors.push(cursor)
        } while (cursor && paged.length < 10)
        expect(paged).to.deep.equal(all.deliveries.map((d) => d.id))
        expect(cursors).to.have.length(2)

        // At a terminal or in a pipe, the table is followed by how to get the next page, on stderr.
        const text = await runCli(['deliveries', 'list', '--webhook', webhook.id, '--limit', '2'], env)
        expect(text.code, text.stderr).to.equal(0)
        expect(text.stderr).to.match(/^more: add --cursor \S+ for the next page\n$/)
        const last = await runCli(['deliveries', 'list', '--webhook', webhook.id, '--limit', '2', '--cursor', cursors[1]!], env)
        expect(last.stderr).to.equal('')

        const otherFilter = await runCli(['deliveries', 'list', '--webhook', webhook.id, '--status', 'failed', '--limit', '2', '--cursor', cursors[0]!], env)
        expect(otherFilter.code).to.equal(1)
        expect(otherFilter.stderr).to.include('cursor was issued for other --webhook/--status filters')
        const edited = await runCli(['deliveries', 'list', '--webhook', webhook.id, '--cursor', `${cursors[0]!}x`], env)
        expect(edited.code).to.equal(1)
        expect(edited.stderr).to.include('cursor is not valid')
      })
    })

    describe('deliveries list without --webhook', function () {
      it('lists the recent deliveries of every customer, newest first, for an operator who names no webhook', async function () {
        const first = await newWebhook()
        const older = await addDelivery(first, {status: 'failed', attempts: [{statusCode: 500, outcome: 'final'}]})
        const firstCustomer = customerId
        customerId = (await services.customers.create({name: 'Delivery state test, another customer'})).id
        const second = await newWebhook()
        const newer = await addDelivery(second)
        // Ahead of whatever else the database holds: the newest two are these.
        const ahead = Date.now() + 3_600_000
        await db('deliveries').where({customer_id: firstCustomer, id: older}).update({created_at: ahead})
        await db('deliveries')
          .where({customer_id: customerId, id: newer})
          .update({created_at: ahead + 1})

        const page = await runCliJson(['deliveries', 'list', '--limit', '1'], env)
        expect(page.deliveries.map((d: {id: string; webhook_id: string}) => [d.id, d.webhook_id])).to.deep.equal([[newer, second.id]])
        const next = await runCliJson(['deliveries', 'list', '--limit', '1', '--cursor', page.next_cursor], env)
        expect(next.deliveries.map((d: {id: string; webhook_id: string}) => [d.id, d.webhook_id])).to.deep.equal([[older, first.id]])
        const failed = await runCliJson(['deliveries', 'list', '--status', 'failed', '--limit', '1'], env)
        expect(failed.deliveries.map((d: {id: string; status: string}) => [d.id, d.status])).to.deep.equal([[older, 'failed']])
      })
    })

    describe('webhooks limit', function () {
      it("sets a webhook's in-flight cap, refuses one out of range in one line with a hint, and resets it to the default", async function () {
        const webhook = await newWebhook()
        const set = await runCliJson(['webhooks', 'limit', webhook.id, '--max-in-flight', '3'], env)
        expect(set).to.include({id: webhook.id, max_in_flight: 3, max_in_flight_override: 3})
        expect(await db('webhooks').where({customer_id: customerId, id: webhook.id}).first('max_in_flight')).to.deep.equal({max_in_flight: 3})
        expect((await runCliJson(['webhooks', 'inspect', webhook.id], env)).scheduling.max_in_flight).to.equal(3)
        const plain = await runCli(['webhooks', 'limit', webhook.id, '--max-in-flight', String(MAX_IN_FLIGHT_LIMIT)], env)
        expect(plain.stdout).to.equal(`Webhook ${webhook.id}: at most ${MAX_IN_FLIGHT_LIMIT} deliveries in flight at once (set by an operator).\n`)
        const piped = await runCli(['webhooks', 'list', '--customer', customerId, '--columns', 'max-in-flight'], env)
        expect(piped.stdout).to.equal(`${MAX_IN_FLIGHT_LIMIT}\n`)

        for (const value of ['0', String(MAX_IN_FLIGHT_LIMIT + 1), '-2']) {
          const refused = await runCli(['webhooks', 'limit', webhook.id, `--max-in-flight=${value}`], env)
          expect(refused.code, value).to.equal(1)
          expect(refused.stderr).to.equal(
            `Error: max in flight must be a whole number from 1 to ${MAX_IN_FLIGHT_LIMIT}, got ${value} (hint: \`leads webhooks limit ${webhook.id} --reset\` goes back to the default of ${DEFAULT_MAX_IN_FLIGHT})\n`,
          )
        }
        expect((await services.webhooks.getById(webhook.id)).maxInFlight).to.equal(MAX_IN_FLIGHT_LIMIT)

        const reset = await runCliJson(['webhooks', 'limit', webhook.id, '--reset'], env)
        expect(reset).to.include({max_in_flight: DEFAULT_MAX_IN_FLIGHT, max_in_flight_override: null})
        expect((await services.webhooks.getById(webhook.id)).maxInFlight).to.equal(null)
        expect((await runCli(['webhooks', 'limit', webhook.id, '--reset'], env)).stdout).to.equal(
          `Webhook ${webhook.id}: at most ${DEFAULT_MAX_IN_FLIGHT} deliveries in flight at once (the default).\n`,
        )
      })

      it('needs exactly one of --max-in-flight and --reset, and a webhook that exists', async function () {
        const webhook = await newWebhook()
        expect((await runCli(['webhooks', 'limit', webhook.id], env)).code).to.equal(2)
        expect((await runCli(['webhooks', 'limit', webhook.id, '--reset', '--max-in-flight', '2'], env)).code).to.equal(2)
        const unknown = await runCli(['webhooks', 'limit', 'wh_nope', '--max-in-flight', '2'], env)
        expect(unknown.code).to.equal(1)
        expect(unknown.stderr).to.equal('Error: webhook wh_nope does not exist (hint: run `leads webhooks list`)\n')
      })
    })

    describe('deliveries tail', function () {
      /** The tail of this test's customer in a pipe, until its output has `lines` lines; then Ctrl-C. */
      async function tailInPipe(extra: string[], lines: number, setUp: () => Promise<void>): Promise<string[]> {
        const tail: ChildProcessWithoutNullStreams = spawn(
          process.execPath,
          [CLI, 'deliveries', 'tail', '--customer', customerId, '--interval', '200ms', ...extra],
          {
            env: {...process.env, ...env, NODE_EXTRA_CA_CERTS: ''},
          },
        )
        let output = ''
        let errors = ''
        tail.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
        tail.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()))
        const exited = new Promise<number | null>((resolve) => tail.on('exit', (code) => resolve(code)))
        try {
          // Written while the tail starts: it shows what changed from 5 s before its start on.
          await setUp()
          const shown = () => output.split('\n').filter(Boolean)
          for (let i = 0; i < 150 && shown().length < lines; i++) await new Promise((resolve) => setTimeout(resolve, 100))
          expect(shown(), errors).to.have.length(lines)
        } finally {
          tail.kill('SIGINT')
        }
        expect(await exited).to.equal(0)
        return output.split('\n').filter(Boolean)
      }

      it('prints tab-separated lines into a pipe, every value whole, with the next attempt and the state last', async function () {
        const webhook = await newWebhook()
        const retryAt = Date.now() + 60_000
        let backingOff = ''
        const lines = await tailInPipe([], 2, async () => {
          backingOff = await addDelivery(webhook, {attempts: [{statusCode: 503, outcome: 'retry'}], nextAttemptAt: retryAt})
        })
        const rows = lines.map((line) => line.split('\t'))
        for (const cells of rows) expect(cells).to.have.length(11)
        expect(rows.map((cells) => [cells[1], cells[2], cells[5], cells[6], cells[8], cells[9], cells[10]])).to.deep.equal([
          [backingOff, webhook.id, '0', 'queued', 'queued', iso(retryAt), 'backing_off'],
          [backingOff, webhook.id, '1', '503', 'retry', iso(retryAt), 'backing_off'],
        ])
      })

      it('prints one JSON object per line with --json: whole ids, the state and the next attempt', async function () {
        const webhook = await newWebhook()
        const held = await newWebhook()
        const probeAt = Date.now() + 120_000
        const ids: Record<string, string> = {}
        const lines = await tailInPipe(['--json'], 4, async () => {
          await openBreaker(held, probeAt, Date.now())
          ids['held'] = await addDelivery(held)
          ids['delivering'] = await addDelivery(webhook, {status: 'delivering', onTheWire: true})
          ids['failed'] = await addDelivery(webhook, {status: 'failed', attempts: [{statusCode: null, error: 'ECONNRESET: socket hang up', outcome: 'final'}]})
        })
        const entries = lines.map((line) => JSON.parse(line))
        const byDelivery = (id: string) => entries.filter((entry) => entry.delivery_id === id).map(({at: _at, lead_id: _lead, ...entry}) => entry)
        expect(byDelivery(ids['held']!)).to.deep.equal([
          {
            delivery_id: ids['held'],
            webhook_id: held.id,
            event_type: 'lead.created',
            delivery_status: 'pending',
            state: 'held',
            next_attempt_at: iso(probeAt),
            attempt: 0,
            result: 'queued',
            duration_ms: null,
            outcome: 'queued',
          },
        ])
        expect(byDelivery(ids['delivering']!)).to.deep.equal([
          {
            delivery_id: ids['delivering'],
            webhook_id: webhook.id,
            event_type: 'lead.created',
            delivery_status: 'delivering',
            state: 'delivering',
            next_attempt_at: null,
            attempt: 0,
            result: 'queued',
            duration_ms: null,
            outcome: 'queued',
          },
        ])
        const failed = {
          delivery_id: ids['failed'],
          webhook_id: webhook.id,
          event_type: 'lead.created',
          delivery_status: 'failed',
          state: 'failed',
          next_attempt_at: null,
        }
        expect(byDelivery(ids['failed']!)).to.deep.equal([
          {...failed, attempt: 0, result: 'queued', duration_ms: null, outcome: 'queued'},
          {...failed, attempt: 1, result: 'ECONNRESET: socket hang up', duration_ms: 40, outcome: 'final'},
        ])
      })

      it('at an 80-column terminal: a line per entry that does not wrap, short ids, and counters that keep deliveries and attempts apart', async function () {
        const webhook = await newWebhook()
        const retryAt = Date.now() + 60_000
        // Even where the suite runs on CI, where Ink would print only its last frame.
        const run = startCliAtTerminal(
          ['deliveries', 'tail', '--customer', customerId, '--interval', '200ms'],
          {...env, CI: 'false', CONTINUOUS_INTEGRATION: 'false'},
          80,
        )
        const backingOff = await addDelivery(webhook, {attempts: [{statusCode: 503, outcome: 'retry'}], nextAttemptAt: retryAt})
        const succeeded = await addDelivery(webhook, {
          status: 'succeeded',
          attempts: [
            {statusCode: null, error: 'ETIMEDOUT: connect ETIMEDOUT', outcome: 'retry'},
            {statusCode: 204, outcome: 'success'},
          ],
        })
        const counters = 'deliveries: 2 queued, 1 succeeded, 0 failed · attempts: 3 (1 retry)'
        const screen = () => run.shown().replace(ANSI, '').split(/\r|\n/)
        try {
          for (let i = 0; i < 150 && !screen().includes(counters); i++) await new Promise((resolve) => setTimeout(resolve, 100))
        } finally {
          run.type('\u0003', {last: true})
        }
        const result = await run.exited
        expect(result.code, result.stdout).to.equal(0)
        const lines = screen()
        expect(lines, result.stdout).to.include(counters)
        for (const line of lines) expect(line.length, line).to.be.at.most(80)
        const at = (ms: string) => ms.slice(11, 19)
        const short = {backingOff: backingOff.slice(0, 8), succeeded: succeeded.slice(0, 8), webhook: webhook.id.slice(0, 9)}
        const entryLines = lines.filter((line) => line.includes(short.backingOff) || line.includes(short.succeeded)).map((line) => line.trimEnd())
        const time = String.raw`\d\d:\d\d:\d\d`
        const expected = [
          new RegExp(`^${time} ${short.backingOff} ${short.webhook} {23}queued {3}backing_off ${at(iso(retryAt))}$`),
          new RegExp(`^${time} ${short.backingOff} ${short.webhook} #1  503 {10}40ms retry {4}backing_off ${at(iso(retryAt))}$`),
          new RegExp(`^${time} ${short.succeeded} ${short.webhook} {23}queued$`),
          new RegExp(`^${time} ${short.succeeded} ${short.webhook} #1  ETIMEDOUT {4}40ms retry$`),
          new RegExp(`^${time} ${short.succeeded} ${short.webhook} #2  204 {10}40ms success$`),
        ]
        for (const pattern of expected)
          expect(
            entryLines.some((line) => pattern.test(line)),
            `${pattern} in\n${entryLines.join('\n')}`,
          ).to.equal(true)
        // Ids stay whole nowhere on screen but the one the tail follows.
        expect(result.stdout).not.to.include(backingOff)
        expect(result.stdout).not.to.include(webhook.id)
      })
    })
  })
})
