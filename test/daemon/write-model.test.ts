import {expect} from 'chai'
import fc from 'fast-check'

import {forEachBackend} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {
  CustomerModel,
  type Expected,
  type LeadBody,
  type ModelLead,
  type OnDuplicate,
  SOURCE_PLATFORMS_USED,
  SOURCE_TYPES_USED,
  STAGES,
  type WriteRequest,
} from '../helpers/lead-model.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

/**
 * Model-based check of the write paths: generated sequences of single creates, bulk requests and
 * retries (with and without Idempotency-Key, bodies reformatted) by two customers run against
 * the daemon and against an in-memory model of what the interface says (test/helpers/lead-model.ts).
 * Every answer must be the model's, and afterwards the customer's leads, their fields and its
 * lead.created events must equal the model's.
 *
 * Some steps are batches sent concurrently. Their answers must then be those of some order of
 * the batch run one at a time (linearizability): the permutations are tried until one explains
 * every answer and the final state. A request whose key another request of the batch also uses
 * may instead get 409 (the first still in flight), which changes nothing.
 */
const SEED = Number(process.env['LEADS_FUZZ_SEED'] ?? 20261124)
const RUNS = Number(process.env['LEADS_FUZZ_RUNS'] ?? 30)

const LEADS = '/api/agents/crm/leads'

// Few people, written several ways, so creates merge often and by both keys.
const EMAILS = ['ann@example.org', 'ANN@Example.org', ' ann@example.org ', 'bob@example.org', 'cy@example.org']
const PHONES = ['+1 (555) 010-0001', '5550100001', '555.010.0002', '1-555-010-0002', '(555) 010 0003']

/** A lead body; with `hostile`, each field may also take a value the daemon must refuse. */
function leadBody(hostile: boolean): fc.Arbitrary<LeadBody> {
  const or = <T>(valid: readonly T[], invalid: readonly T[]) => fc.constantFrom(...valid, ...(hostile ? invalid : []))
  return fc.record(
    {
      contact_name: fc.constantFrom('Ann', ' Bob ', '', 'Cy Young', 'Dee'),
      contact_email: or(EMAILS, ['broken']),
      contact_phone: or(PHONES, ['no digits']),
      stage_slug: or([...STAGES], ['nope']),
      source_platform: fc.constantFrom(...SOURCE_PLATFORMS_USED),
      source_type: fc.constantFrom(...SOURCE_TYPES_USED),
      custom_fields: fc.record(
        {
          lead_line: or(['buyer', 'seller', ' seller '], ['renter']),
          budget: hostile ? fc.oneof(fc.integer({min: -5, max: 1000}), fc.constant('high')) : fc.integer({min: -5, max: 1000}),
          shoe_size: fc.constant(44),
        },
        {requiredKeys: []},
      ) as fc.Arbitrary<Record<string, string | number>>,
    },
    {requiredKeys: []},
  )
}
const body = fc.oneof({arbitrary: leadBody(false), weight: 4}, {arbitrary: leadBody(true), weight: 1})
const key = fc.option(fc.constantFrom('k1', 'k2', 'k3'), {nil: undefined, freq: 2})

type Command =
  | {kind: 'write'; customer: number; request: WriteRequest; pretty: boolean}
  | {kind: 'retry'; back: number; pretty: boolean}
  | {kind: 'concurrent'; customer: number; requests: WriteRequest[]}

const createRequest: fc.Arbitrary<WriteRequest> = fc.record({endpoint: fc.constant('create' as const), body, key}, {requiredKeys: ['endpoint', 'body']})
const bulkRequest: fc.Arbitrary<WriteRequest> = fc.record(
  {
    endpoint: fc.constant('bulk' as const),
    body: fc.record(
      {leads: fc.array(body, {minLength: 1, maxLength: 6}), on_duplicate: fc.constantFrom<OnDuplicate>('update', 'skip', 'error'), dry_run: fc.boolean()},
      {requiredKeys: ['leads']},
    ),
    key,
  },
  {requiredKeys: ['endpoint', 'body']},
)
const anyRequest = fc.oneof({arbitrary: createRequest, weight: 3}, {arbitrary: bulkRequest, weight: 1})
const customer = fc.integer({min: 0, max: 1})

const command: fc.Arbitrary<Command> = fc.oneof(
  {arbitrary: fc.record({kind: fc.constant('write' as const), customer, request: anyRequest, pretty: fc.boolean()}), weight: 5},
  {arbitrary: fc.record({kind: fc.constant('retry' as const), back: fc.nat({max: 4}), pretty: fc.boolean()}), weight: 2},
  {
    arbitrary: fc
      .record({kind: fc.constant('concurrent' as const), customer, requests: fc.array(anyRequest, {minLength: 2, maxLength: 4}), twin: fc.boolean()})
      // A twin: the batch's first request sent twice at once, the retry that races its original.
      .map(({twin, ...batch}) => ({...batch, requests: twin ? [...batch.requests, batch.requests[0]!] : batch.requests})),
    weight: 2,
  },
)

/** Which daemon id each model lead has; a model lead is bound the first time an answer names it. */
class Bindings {
  constructor(
    readonly toDaemon = new Map<number, string>(),
    readonly toModel = new Map<string, number>(),
  ) {}

  clone(): Bindings {
    return new Bindings(new Map(this.toDaemon), new Map(this.toModel))
  }

  /** Binds a newly created lead; an error when the id is not new. */
  bindNew(ref: number, id: string): string | null {
    if (this.toModel.has(id)) return `a "new" lead got the id ${id} of an existing lead`
    this.toDaemon.set(ref, id)
    this.toModel.set(id, ref)
    return null
  }

  /** Checks that an existing lead is named by its id. */
  same(ref: number, id: string): string | null {
    const bound = this.toDaemon.get(ref)
    if (bound === undefined) return this.bindNew(ref, id)
    return bound === id ? null : `expected lead ${bound}, got ${id}`
  }
}

interface ApiLead {
  id: string
  created_at: string
  contact_name: string | null
  contact_email: string | null
  contact_phone: string | null
  current_stage: {slug: string}
  source_platform: string
  source_type: string
  custom_fields?: Record<string, unknown>
}

function leadDifference(model: ModelLead, lead: ApiLead): string | null {
  const want = {
    contact_name: model.contactName,
    contact_email: model.contactEmail,
    contact_phone: model.contactPhone,
    stage: model.stage,
    source_platform: model.sourcePlatform,
    source_type: model.sourceType,
    custom_fields: model.customFields,
  }
  const got = {
    contact_name: lead.contact_name,
    contact_email: lead.contact_email,
    contact_phone: lead.contact_phone,
    stage: lead.current_stage.slug,
    source_platform: lead.source_platform,
    source_type: lead.source_type,
    custom_fields: lead.custom_fields,
  }
  return JSON.stringify(want) === JSON.stringify({...got, custom_fields: sortKeys(got.custom_fields ?? {}, want.custom_fields)})
    ? null
    : `lead ${lead.id}: model ${JSON.stringify(want)}, daemon ${JSON.stringify(got)}`
}

/** `value`'s keys in `like`'s order, so JSON comparison ignores key order. */
function sortKeys(value: Record<string, unknown>, like: Record<string, unknown>): Record<string, unknown> {
  const keys = [...Object.keys(like), ...Object.keys(value).filter((k) => !(k in like))]
  return Object.fromEntries(keys.filter((k) => k in value).map((k) => [k, value[k]]))
}

/** Whether the daemon's answer is the one the model expects; null when it is, else what differs. */
function answerDifference(expected: Expected, answer: TestResponse, bindings: Bindings): string | null {
  const {status, body} = answer
  switch (expected.kind) {
    case 'replay':
      if (status !== expected.status || answer.text !== expected.text) return `expected the stored ${expected.status} replayed, got ${status} ${answer.text}`
      return answer.headers.get('idempotent-replayed') === 'true' ? null : 'a replay without Idempotent-Replayed: true'
    case 'key-conflict':
      return status === 409 ? null : `expected 409 for a key reused with another body, got ${status} ${answer.text}`
    case 'invalid':
      return status === 400 ? null : `expected 400, got ${status} ${answer.text}`
    case 'created':
    case 'merged': {
      if (status !== 201) return `expected 201, got ${status} ${answer.text}`
      if (body.merged !== (expected.kind === 'merged')) return `expected merged: ${expected.kind === 'merged'}, got ${answer.text}`
      const bound = expected.kind === 'created' ? bindings.bindNew(expected.lead.ref, body.lead.id) : bindings.same(expected.lead.ref, body.lead.id)
      return bound ?? leadDifference(expected.lead, body.lead)
    }
    case 'bulk': {
      if (status !== 200) return `expected 200, got ${status} ${answer.text}`
      if (body.dry_run !== expected.dryRun) return `expected dry_run ${expected.dryRun}, got ${answer.text}`
      const statuses = body.results.map((row: {status: string}) => row.status)
      if (JSON.stringify(statuses) !== JSON.stringify(expected.rows.map((row) => row.status))) {
        return `expected rows ${expected.rows.map((row) => row.status).join(',')}, got ${statuses.join(',')}`
      }
      for (const [index, row] of expected.rows.entries()) {
        const leadId = body.results[index].lead_id as string | undefined
        if (row.ref === undefined) continue
        if (row.status === 'created') {
          // A dry run names no id for a lead it would create.
          if (expected.dryRun) {
            if (leadId !== undefined) return `a dry run named id ${leadId} for a lead it would create`
            continue
          }
          const bound = bindings.bindNew(row.ref, leadId ?? '')
          if (bound) return `row ${index}: ${bound}`
        } else if (expected.dryRun && !bindings.toDaemon.has(row.ref)) {
          // Nor for it on a later row that matches it: that id will never exist.
          if (leadId !== undefined) return `row ${index}: a dry run named id ${leadId} for a lead an earlier row would create`
        } else {
          const same = bindings.same(row.ref, leadId ?? '')
          if (same) return `row ${index}: ${same}`
        }
      }
      return null
    }
  }
}

/** The customer's leads and lead.created events as the daemon holds them. */
interface DaemonState {
  leads: ApiLead[]
  eventLeadIds: string[]
}

/** Whether the daemon's state is the model's; null when it is. */
function stateDifference(model: CustomerModel, state: DaemonState, bindings: Bindings): string | null {
  if (state.leads.length !== model.leads.length) return `model has ${model.leads.length} leads, daemon ${state.leads.length}`
  for (const lead of state.leads) {
    const ref = bindings.toModel.get(lead.id)
    const modelLead = model.leads.find((candidate) => candidate.ref === ref)
    if (!modelLead) return `daemon lead ${lead.id} is not in the model`
    const difference = leadDifference(modelLead, lead)
    if (difference) return difference
  }
  const wantEvents = model.events.map((ref) => bindings.toDaemon.get(ref)).sort()
  const gotEvents = [...state.eventLeadIds].sort()
  return JSON.stringify(wantEvents) === JSON.stringify(gotEvents)
    ? null
    : `lead.created for ${JSON.stringify(wantEvents)} expected, daemon has ${JSON.stringify(gotEvents)}`
}

/**
 * Leads created by one concurrent batch are as old as the daemon made them: an order that explains
 * the answers need not be the order of their creation times, and "the oldest lead with this phone"
 * follows the latter. The model takes the daemon's age order (created_at, then the time-ordered id).
 */
function adoptAgeOrder(model: CustomerModel, state: DaemonState, bindings: Bindings): void {
  const age = new Map(
    [...state.leads]
      .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : 1))
      .map((lead, position) => [bindings.toModel.get(lead.id), position]),
  )
  model.leads.sort((a, b) => age.get(a.ref)! - age.get(b.ref)!)
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items]
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]))
}

describe('write paths against a model (generated sequences, some concurrent)', function () {
  this.timeout(300_000)

  forEachBackend((backend) => {
    let daemon: TestDaemon

    before(async function () {
      daemon = await startTestDaemon(backend, {role: 'api'})
    })
    after(async function () {
      await daemon.stop()
    })

    async function newCustomer(): Promise<TestTenant> {
      const tenant = await newTenant(daemon.services, undefined, {roomy: true})
      await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
      return tenant
    }

    function send(tenant: TestTenant, request: WriteRequest, pretty: boolean): Promise<TestResponse> {
      const headers: Record<string, string> = {'content-type': 'application/json'}
      if (request.key !== undefined) headers['idempotency-key'] = request.key
      // Pretty-printed retries check that key order and whitespace do not make another body.
      const text = pretty ? JSON.stringify(reorder(request.body), null, 2) : JSON.stringify(request.body)
      return daemon.request(request.endpoint === 'create' ? LEADS : `${LEADS}/bulk`, {
        method: 'POST',
        token: tenant.token,
        customerId: tenant.customer.id,
        headers,
        body: text,
      })
    }

    async function stateOf(tenant: TestTenant): Promise<DaemonState> {
      const leads: ApiLead[] = []
      let path = `${LEADS}?include_custom_fields=true&limit=100`
      for (let page = 0; page < 50; page++) {
        const response = await daemon.request(path, {token: tenant.token, customerId: tenant.customer.id})
        expect(response.status, response.text).to.equal(200)
        leads.push(...response.body.leads)
        if (!response.body.next_cursor) break
        path = `${LEADS}?include_custom_fields=true&limit=100&cursor=${encodeURIComponent(response.body.next_cursor)}`
      }
      const events = (await daemon.db('events').where({customer_id: tenant.customer.id, type: 'lead.created'}).select('lead_id')) as Array<{
        lead_id: string
      }>
      return {leads, eventLeadIds: events.map((event) => event.lead_id)}
    }

    it("answers every request as the model does and ends in the model's state", async function () {
      // What the runs exercised, so a generator that stops reaching a case fails instead of passing quietly.
      const seen = new Map<string, number>()
      const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)
      await fc.assert(
        fc.asyncProperty(fc.array(command, {minLength: 3, maxLength: 14}), async (commands) => {
          let ref = 0
          const nextRef = () => ++ref
          const tenants = [await newCustomer(), await newCustomer()]
          const models = [new CustomerModel(nextRef), new CustomerModel(nextRef)]
          let bindings = new Bindings()
          const history: Array<{customer: number; request: WriteRequest}> = []

          for (const [step, command] of commands.entries()) {
            if (command.kind !== 'concurrent') {
              const {customer, request} =
                command.kind === 'write'
                  ? command
                  : (history.at(-1 - command.back) ?? {customer: 0, request: {endpoint: 'create' as const, body: {contact_name: 'first'}}})
              const expected = models[customer]!.apply(request)
              const answer = await send(tenants[customer]!, request, command.pretty)
              const difference = answerDifference(expected, answer, bindings)
              expect(difference, `step ${step}: ${JSON.stringify(request)}`).to.equal(null)
              count(expected.kind)
              if (expected.kind === 'bulk') for (const row of expected.rows) count(`bulk ${row.status}`)
              if (expected.kind !== 'replay' && expected.kind !== 'key-conflict') models[customer]!.remember(request, answer.status, answer.text)
              history.push({customer, request})
              continue
            }

            const tenant = tenants[command.customer]!
            const answers = await Promise.all(command.requests.map((request) => send(tenant, request, false)))
            const state = await stateOf(tenant)
            const keyCount = new Map<string, number>()
            for (const request of command.requests)
              if (request.key) keyCount.set(`${request.endpoint} ${request.key}`, (keyCount.get(`${request.endpoint} ${request.key}`) ?? 0) + 1)
            const inFlight = (request: WriteRequest) => request.key !== undefined && keyCount.get(`${request.endpoint} ${request.key}`)! > 1

            // Some order of the batch, one at a time, must explain every answer and the final state.
            const explanations: string[] = []
            let explained: {model: CustomerModel; bindings: Bindings} | null = null
            for (const order of permutations(command.requests.map((request, index) => ({request, answer: answers[index]!})))) {
              const model = models[command.customer]!.clone()
              const tried = bindings.clone()
              let difference: string | null = null
              for (const {request, answer} of order) {
                if (answer.status === 409 && inFlight(request)) continue
                const expected = model.apply(request)
                difference = answerDifference(expected, answer, tried)
                if (difference) break
                if (expected.kind !== 'replay' && expected.kind !== 'key-conflict') model.remember(request, answer.status, answer.text)
              }
              difference ??= stateDifference(model, state, tried)
              if (!difference) {
                explained = {model, bindings: tried}
                break
              }
              explanations.push(difference)
            }
            expect(
              explained,
              `step ${step}: no order of ${JSON.stringify(command.requests)} explains the answers ${JSON.stringify(answers.map((a) => `${a.status} ${a.text}`))}: ${explanations.join('; ')}`,
            ).not.to.equal(null)
            count(answers.some((answer) => answer.status === 409) ? 'concurrent with 409' : 'concurrent')
            if (new Set(command.requests).size < command.requests.length) count('concurrent twin')
            models[command.customer] = explained!.model
            bindings = explained!.bindings
            adoptAgeOrder(explained!.model, state, bindings)
            for (const request of command.requests) history.push({customer: command.customer, request})
          }

          for (const [index, tenant] of tenants.entries()) {
            expect(stateDifference(models[index]!, await stateOf(tenant), bindings), `customer ${index} at the end`).to.equal(null)
          }
        }),
        {seed: SEED, numRuns: RUNS},
      )
      for (const what of [
        'created',
        'merged',
        'invalid',
        'replay',
        'key-conflict',
        'bulk created',
        'bulk updated',
        'bulk skipped',
        'bulk failed',
        'concurrent',
        'concurrent twin',
      ]) {
        expect(seen.get(what) ?? 0, `no run exercised "${what}": ${JSON.stringify([...seen])}`).to.be.greaterThan(0)
      }
      if (process.env['LEADS_FUZZ_VERBOSE']) console.log(JSON.stringify([...seen]))
    })
  })
})

/** The same JSON with its keys in reverse order at every depth. */
function reorder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reorder)
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reorder(v)]),
    )
  return value
}
