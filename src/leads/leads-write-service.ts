import type {Stage} from '../customers/customer-types.js'
import type {CustomersStore} from '../customers/customers-store.js'
import {isGuardRefusal, isLockRefusal, isUniqueViolation} from '../db/errors.js'
import {type Db, isMysql} from '../db/knex.js'
import {GroupCommitter, type Settled} from '../db/group-commit.js'
import {guardStatement, StatementBatch, type Statement} from '../db/statements.js'
import {inWriteTransaction, type WriteOutcome, type WriteTransaction} from '../db/write-transaction.js'
import type {DeliveryOutbox} from '../deliveries/outbox.js'
import type {EventsStore, StoredEvent} from '../events/events-store.js'
import type {IdempotencyRecord, IdempotencyStore} from '../idempotency/idempotency-store.js'
import {LEAD_CREATED, leadCreatedSnapshot} from '../events/lead-created.js'
import {bodyAjv, compileOnFirstUse, toValidationError} from '../shared/ajv.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {AppError, ValidationError} from '../shared/errors.js'
import {type BulkPlan, type BulkRow, ON_DUPLICATE, type OnDuplicate, planBulk, type RowOutcome} from './bulk-plan.js'
import {completeLeadInput, type CustomerSetup, customerSetup, type LeadDraft, readLeadDraft} from './lead-input.js'
import {mergeLead, newLead} from './lead-merge.js'
import {matchCandidates, type MatchEntry, MatchPool, newPeopleChecks} from './lead-matching.js'
import type {LeadRecord} from './lead-types.js'
import type {LeadMatchStore} from './lead-match-store.js'
import {type LeadOwner, ownersRead, type LeadWithRelations, stagesById, withStageAndOwner} from './lead-rows.js'
import type {LeadWriteStatements} from './lead-write-statements.js'
import {KeptPerCustomer, SetupCache} from './setup-cache.js'

export const BULK_MAX_ROWS = 500

/** Bulk request envelope; each row is checked on its own with the single-create rules. */
export const BULK_REQUEST_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['leads'],
  properties: {
    leads: {type: 'array', minItems: 1, maxItems: BULK_MAX_ROWS},
    dry_run: {type: 'boolean', default: false},
    on_duplicate: {type: 'string', enum: [...ON_DUPLICATE], default: 'update'},
  },
} as const

const BULK_RULES: Record<string, string> = {
  leads: `must be an array of 1 to ${BULK_MAX_ROWS} leads`,
  dry_run: 'must be true or false',
  on_duplicate: `must be one of ${ON_DUPLICATE.join(', ')}`,
}
const validateBulk = compileOnFirstUse(bodyAjv, BULK_REQUEST_SCHEMA)

export interface CreateResult {
  lead: LeadWithRelations
  merged: boolean
  unknownCustomFields: string[]
}

export interface BulkResult {
  dryRun: boolean
  outcomes: RowOutcome[]
  unknownCustomFields: Array<{slug: string; rows: number[]}>
}

/** A response stored under an Idempotency-Key. */
export interface StoredResponse {
  statusCode: number
  body: string
}

/**
 * What a caller adds to a write: the Idempotency-Key it claims in the write's transaction (the
 * claim opens the transaction, the response is stored with its COMMIT, so both commit with the
 * change or not at all). `respond` gives the response to store: the result's, or, for a create
 * refused alone by its input (a 4xx) inside a group that commits, the refusal's. A deadlock retry
 * calls it again with that attempt's outcome.
 */
export interface WriteHooks<R> {
  key?: {claim: IdempotencyRecord; respond(outcome: R | AppError): StoredResponse}
  /** Runs with everything written and before the commit: tests hold a write open with it. */
  beforeCommit?: () => Promise<void>
}

/** A write with nothing added by its caller (no Idempotency-Key). */
export const NO_HOOKS: WriteHooks<never> = {}

/**
 * How single creates are grouped (GroupCommitter). One group in flight: the creates that arrive
 * meanwhile make the next one. At c=16 on MariaDB this took less CPU per create than two groups
 * in flight, in every one of four alternated runs (docs/performance.md). A group whose COMMIT is
 * under way no longer counts: the COMMIT waits about 1 ms for the redo log's write to the disk,
 * a third of the group's time in MariaDB, and the next group's statements can run meanwhile.
 */
const CREATE_GROUPS = {maxInFlight: 1, maxGroup: 64, slowMs: 50}

/** What asNew assumes of a customer: its setup at a version, and its lead.created subscribers. */
interface KeptForGuess {
  version: number
  setup: CustomerSetup
  subscribers: string[]
}

/** What a group's creates of one customer are planned with. */
interface PlannedCustomer {
  customerId: string
  members: CreateRequest[]
  known: CustomerSetup
  candidates: readonly MatchEntry[]
  /** The owners of the candidates, read in the write's transaction. */
  owners: ReadonlyMap<string, LeadOwner>
  subscribers: string[]
}

/** A group's creates planned: each outcome, the writes, the responses to store under keys, the deliveries to dispatch. */
interface CreatePlan {
  outcomes: Array<Settled<CreateResult>>
  writes: Statement[]
  responses: CompletedKey[]
  deliveryIds: string[]
  /** The customers of the group with a create that merged into a stored lead. */
  merging: ReadonlySet<string>
  beforeCommit: (() => Promise<void>) | undefined
}

/** A group of creates written: how, and what the caller needs of its plan once it committed. */
interface WrittenGroup {
  way: 'asNew' | 'checked' | 'guessRefused'
  outcomes: Array<Settled<CreateResult>>
  deliveryIds: string[]
  merging: ReadonlySet<string>
}

/** A single create waiting for its group. */
interface CreateRequest {
  customerId: string
  draft: LeadDraft
  hooks: WriteHooks<CreateResult>
}

/**
 * Pushing leads: single create with merge by email or phone, and set-based bulk create.
 * Writers lock the match keys of their rows first, so concurrent pushes of one person end as
 * one lead on either backend.
 *
 * A checked write is two round trips on MySQL (write-transaction.ts): first what it must read
 * (the caller's claim, the match-key locks, the leads they match, the customer's setup version,
 * and for a create the webhooks to notify), then everything it writes, with the COMMIT. The
 * customer's stages and fields are read only when the version says they changed (SetupCache),
 * and the owners of the leads it merges into only when one has an owner (a third round trip).
 * Single creates of new people are usually one round trip (asNew).
 */
export class LeadsWriteService {
  constructor(
    private readonly db: Db,
    private readonly matches: LeadMatchStore,
    private readonly leads: LeadWriteStatements,
    private readonly customers: CustomersStore,
    private readonly events: EventsStore,
    private readonly outbox: DeliveryOutbox,
    private readonly idempotency: IdempotencyStore,
    private readonly clock: Clock = systemClock,
    private readonly setups: SetupCache = new SetupCache(),
  ) {}

  /** The lead.created subscribers each customer's latest checked write read, for the guess of asNew. */
  private readonly subscribers = new KeptPerCustomer<string[]>()
  /**
   * Customers whose latest group merged into a stored lead. Their next group is written checked:
   * a refused guess costs a round trip and a rollback, so a customer pushing mostly people it
   * has already does not pay it on every create.
   */
  private readonly merging = new KeptPerCustomer<boolean>()
  /**
   * Customers whose latest bulk write found stored leads among its rows' matches. Their next bulk
   * is not guessed (guessAllNew): a customer re-sending people it has already would otherwise
   * plan every request twice.
   */
  private readonly bulkMatching = new KeptPerCustomer<boolean>()

  /** How groups of creates were written since start (for the metrics): as new, checked, and guesses refused. */
  readonly groupsWritten = {asNew: 0, checked: 0, guessRefused: 0}
  /** Bulk writes planned while their reads were out (used) and planned again after them (dropped): see guessAllNew. */
  readonly bulkGuesses = {used: 0, dropped: 0}

  private readonly creates = new GroupCommitter<CreateRequest, CreateResult>((requests, release) => this.writeCreates(requests, release), CREATE_GROUPS)

  /**
   * Creates a lead or merges it into the customer's matching lead; only a genuine insert records
   * lead.created. Creates that arrive together are written together (see CREATE_GROUPS).
   */
  async create(customerId: string, body: unknown, hooks: WriteHooks<CreateResult> = NO_HOOKS): Promise<CreateResult> {
    return this.creates.submit({customerId, draft: readLeadDraft(body), hooks})
  }

  /**
   * Writes a group of creates in one transaction. Once a customer's setup and lead.created
   * subscribers are kept (after its first write), the group is first written as if every create
   * were a new person, in one round trip (asNew); when the guard refuses that guess, the same
   * transaction goes on checked (checked, without claiming the keys again). A guess refused for
   * its Idempotency-Keys (one stored, or still held by its first request) is rolled back and the
   * group written checked from the start, which tells which. A create refused by its input fails
   * alone (its hooks store the refusal); anything else fails the group, which GroupCommitter then
   * writes create by create.
   */
  private async writeCreates(requests: readonly CreateRequest[], release: () => void): Promise<Array<Settled<CreateResult>>> {
    const kept = this.keptForGuess(requests)
    // The next group is written while this one's COMMIT waits on the disk (see CREATE_GROUPS).
    const options = {committing: release}
    let written: WrittenGroup
    try {
      written = await inWriteTransaction(this.db, (trx) => (kept ? this.asNew(trx, requests, kept) : this.checked(trx, requests, 'checked', true)), options)
    } catch (error) {
      if (!kept || !isRefusedGuess(error)) throw error
      written = await inWriteTransaction(this.db, (trx) => this.checked(trx, requests, 'guessRefused', true), options)
    }
    this.groupsWritten[written.way]++
    for (const customerId of new Set(requests.map((request) => request.customerId))) this.merging.set(customerId, written.merging.has(customerId))
    await this.outbox.dispatch(written.deliveryIds)
    return written.outcomes
  }

  /**
   * The guess: no stored lead matches any create of the group, and each customer's setup and
   * subscribers are as kept. Everything the group writes goes out with its checks and the COMMIT
   * in one batch: the key claims (with their responses), the match-key locks, then one guard
   * statement that fails the batch when a check finds otherwise (guardStatement), then the writes.
   * The locks come before the guard, so a concurrent write of the same person has committed by
   * the time the guard looks, and is seen. The claims come before the locks: a key still held by
   * its first request (which holds that person's locks too) must be refused at once, not waited on.
   */
  private async asNew(trx: WriteTransaction, requests: readonly CreateRequest[], kept: ReadonlyMap<string, KeptForGuess>): Promise<WriteOutcome<WrittenGroup>> {
    const locks: Statement[] = []
    const probes: Statement[] = []
    const customers = byCustomerInLockOrder(requests).map(([customerId, members]) => {
      const {version, setup, subscribers} = kept.get(customerId)!
      const checks = newPeopleChecks(
        this.matches,
        customerId,
        members.map((member) => member.draft),
      )
      locks.push(...checks.locks)
      probes.push(
        this.customers.setupChangedProbe(customerId, version),
        this.outbox.subscribersChangedProbe(customerId, LEAD_CREATED, subscribers),
        ...checks.probes,
      )
      return {customerId, members, known: setup, candidates: [], owners: new Map(), subscribers}
    })
    const plan = this.planCreates(requests, customers)
    return {
      value: writtenGroup(plan, 'asNew'),
      commitWith: [...this.idempotency.claimAnsweredStatements(plan.responses), ...locks, guardStatement(probes), ...plan.writes],
      beforeCommit: plan.beforeCommit,
      // The claims and locks before the guard hold: the keys are claimed (with the guessed responses, overwritten below).
      orElse: (error) => (isGuardRefusal(error) ? this.checked(trx, requests, 'guessRefused', false) : undefined),
    }
  }

  /**
   * Reads first, then writes: the reads of all the creates in the first batch (their keys'
   * claims unless the transaction holds them already, per customer one set of match-key locks
   * and candidates, as a bulk request has), then every write with the COMMIT. What it reads of
   * the setup and subscribers is kept for asNew.
   */
  private async checked(
    trx: WriteTransaction,
    requests: readonly CreateRequest[],
    way: WrittenGroup['way'],
    claim: boolean,
  ): Promise<WriteOutcome<WrittenGroup>> {
    const keys = claim ? requests.flatMap((request) => (request.hooks.key ? [request.hooks.key.claim] : [])) : []
    const reads = new StatementBatch().add(...this.idempotency.claimStatements(keys))
    const pending = byCustomerInLockOrder(requests).map(([customerId, members]) => ({
      customerId,
      members,
      setup: this.readSetup(reads, customerId),
      candidates: this.readCandidates(
        reads,
        customerId,
        members.map((member) => member.draft),
        true,
      ),
      subscribers: reads.read(this.outbox.subscribersRead(customerId, LEAD_CREATED)),
    }))
    await reads.send(trx)
    const owners = await this.readOwners(
      trx,
      pending.map((customer) => ({customerId: customer.customerId, candidates: customer.candidates()})),
    )
    const customers: PlannedCustomer[] = []
    for (const customer of pending) {
      const subscribers = customer.subscribers()
      this.subscribers.set(customer.customerId, subscribers)
      const candidates = customer.candidates()
      customers.push({
        customerId: customer.customerId,
        members: customer.members,
        known: await customer.setup(trx),
        candidates,
        owners: owners.get(customer.customerId) ?? new Map(),
        subscribers,
      })
    }
    const plan = this.planCreates(requests, customers)
    return {
      value: writtenGroup(plan, way),
      commitWith: [...plan.writes, ...this.idempotency.completeStatements(plan.responses)],
      beforeCommit: plan.beforeCommit,
    }
  }

  /**
   * Each create's outcome and the group's writes, given each customer's setup, the stored leads
   * its creates could match (oldest first) and its subscribers. Creates of one person resolve in
   * arrival order, as if sent one by one.
   */
  private planCreates(requests: readonly CreateRequest[], customers: readonly PlannedCustomer[]): CreatePlan {
    const settled = new Map<CreateRequest, Settled<CreateResult>>()
    const leadWrites: Statement[] = []
    const events: StoredEvent[] = []
    const deliveries: Array<{event: StoredEvent; webhookIds: string[]}> = []
    const responses: CompletedKey[] = []
    const store = (request: CreateRequest, outcome: CreateResult | AppError) => {
      if (request.hooks.key) responses.push(storedResponse(request.hooks.key, outcome))
    }
    const now = this.clock.now()
    const merging = new Set<string>()
    for (const {customerId, members, known, candidates, owners, subscribers} of customers) {
      const stages = stagesById(known.stages)
      const pool = new MatchPool(candidates)
      const stored = new Map(candidates.map((entry) => [entry.lead.id, entry.lead]))
      const changed = new Map<string, LeadRecord>()
      for (const request of members) {
        try {
          const input = completeLeadInput(request.draft, known)
          const match = pool.find(input)
          if (match && stored.has(match.lead.id)) merging.add(customerId)
          const record = match
            ? mergeLead(match.lead, input, now)
            : newLead(customerId, input, {stageId: firstStageId(known.stages), sourceType: 'manual'}, now)
          if (match) pool.replace(match.position, record)
          else pool.add(record)
          changed.set(record.id, record)
          const lead = withStageAndOwner(record, stages, owners)
          if (!match) {
            const event = this.events.event({customerId, type: LEAD_CREATED, leadId: lead.id, payload: leadCreatedSnapshot(lead), createdAt: now})
            events.push(event)
            deliveries.push({event, webhookIds: subscribers})
          }
          const created = {lead, merged: match !== null, unknownCustomFields: input.unknownCustomFields}
          settled.set(request, {value: created})
          store(request, created)
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error
          settled.set(request, {error})
          store(request, error)
        }
      }
      leadWrites.push(...this.leads.writeStatements([...changed.values()], stored))
    }
    const outbox = this.outbox.record(deliveries)
    const holds = requests.flatMap((request) => (request.hooks.beforeCommit ? [request.hooks.beforeCommit] : []))
    return {
      outcomes: requests.map((request) => settled.get(request)!),
      writes: [...leadWrites, ...this.events.insertStatements(events), ...outbox.statements],
      responses,
      deliveryIds: outbox.ids,
      merging,
      beforeCommit: holds.length === 0 ? undefined : async () => void (await Promise.all(holds.map((hold) => hold()))),
    }
  }

  /** What asNew needs kept for every customer of the group (MySQL only), or null. */
  private keptForGuess(requests: readonly CreateRequest[]): Map<string, KeptForGuess> | null {
    if (!isMysql(this.db)) return null
    const kept = new Map<string, KeptForGuess>()
    for (const {customerId} of requests) {
      const setup = this.setups.get(customerId)
      const subscribers = this.subscribers.get(customerId)
      if (!setup || !subscribers || this.merging.get(customerId)) return null
      kept.set(customerId, {...setup, subscribers})
    }
    return kept
  }

  /** Creates, merges or skips up to 500 rows in a few statements; rows fail independently; no events. */
  async bulk(customerId: string, body: unknown, hooks: WriteHooks<BulkResult> = NO_HOOKS): Promise<BulkResult> {
    const request = parseBulkRequest(body)
    const drafts = request.leads.map((raw) => attempt(() => readLeadDraft(raw)))
    const write = !request.dryRun
    return inWriteTransaction(this.db, async (trx) => {
      const reads = new StatementBatch().add(...this.idempotency.claimStatements(hooks.key ? [hooks.key.claim] : []))
      const setup = this.readSetup(reads, customerId)
      // A dry run reads without locking and writes nothing.
      const candidates = this.readCandidates(
        reads,
        customerId,
        drafts.flatMap((draft) => ('value' in draft ? [draft.value] : [])),
        write,
      )
      const answered = reads.send(trx)
      // The guess is planned (synchronously) while the database takes the match-key locks and
      // reads the candidates: the request's first round trip, about 16 ms for 500 rows.
      const guess = write ? this.guessAllNew(trx, customerId, drafts, request.onDuplicate) : null
      await answered
      const known = await setup(trx)
      const existing = candidates()
      if (write) this.bulkMatching.set(customerId, existing.length > 0)
      const holds = guess !== null && guess.setup === known && existing.length === 0
      if (guess) this.bulkGuesses[holds ? 'used' : 'dropped']++
      const planned = holds ? guess : planBulkRequest(customerId, drafts, existing, known, request.onDuplicate, this.clock.now())
      // The leads go ahead: the database writes them (the larger part of its work) while their
      // counts, search words and the stored response are built.
      if (write) trx.sendAhead(holds ? guess.leadRows : this.leads.upsertRows(planned.plan.writes))
      const result = {dryRun: request.dryRun, outcomes: planned.plan.outcomes, unknownCustomFields: unknownFieldReport(planned.rows)}
      const derived = write ? this.leads.derivedFromUpsert(planned.plan.writes, new Map(existing.map((entry) => [entry.lead.id, entry.lead]))) : []
      const stored = hooks.key ? this.idempotency.completeStatements([storedResponse(hooks.key, result)]) : []
      return {value: result, commitWith: [...derived, ...stored], beforeCommit: hooks.beforeCommit}
    })
  }

  /**
   * A bulk request planned before its reads answer, on the guess that holds for a batch of new
   * people: no row matches a stored lead, and the customer's setup is the one kept. Its leads'
   * insert is written out too, ready to send. Null when no setup is kept, or when the customer's
   * latest bulk matched stored leads. The caller uses it only when the reads bear both out, and
   * plans again otherwise.
   */
  private guessAllNew(
    trx: WriteTransaction,
    customerId: string,
    drafts: readonly ParsedDraft[],
    onDuplicate: OnDuplicate,
  ): (PlannedBulk & {setup: CustomerSetup; leadRows: Statement[]}) | null {
    const setup = this.setups.get(customerId)?.setup
    if (!setup || this.bulkMatching.get(customerId)) return null
    const planned = planBulkRequest(customerId, drafts, [], setup, onDuplicate, this.clock.now())
    return {...planned, setup, leadRows: trx.format(this.leads.upsertRows(planned.plan.writes))}
  }

  /**
   * Adds the customer's setup version to a write's reads (and its stages and fields when none are
   * kept); the function returned gives the setup once the reads are sent, read again in the
   * transaction when it changed since it was kept (see SetupCache).
   */
  private readSetup(reads: StatementBatch, customerId: string): (trx: WriteTransaction) => Promise<CustomerSetup> {
    const version = reads.read(this.customers.setupVersionRead(customerId))
    const kept = this.setups.get(customerId)
    // Read after the version: a change committed in between makes the kept pair look older, never newer.
    const fresh = kept ? null : this.readDefinitions(reads, customerId)
    let setup: CustomerSetup | null = null
    return async (trx) => {
      if (setup) return setup
      const current = version() ?? 0
      if (kept?.version === current) return (setup = kept.setup)
      const definitions = fresh ?? this.readDefinitions(new StatementBatch(), customerId)
      if (!fresh) await definitions.batch.send(trx)
      setup = customerSetup(definitions.stages(), definitions.fields())
      this.setups.set(customerId, {version: current, setup})
      return setup
    }
  }

  private readDefinitions(batch: StatementBatch, customerId: string) {
    return {batch, stages: batch.read(this.customers.stagesRead(customerId)), fields: batch.read(this.customers.fieldsRead(customerId))}
  }

  /**
   * The owners of the stored leads a group's creates may merge into, per customer: read in the
   * write's transaction (SQLite's one connection is the transaction's), in one more round trip
   * that only a group with an owned candidate makes.
   */
  private async readOwners(
    trx: WriteTransaction,
    customers: ReadonlyArray<{customerId: string; candidates: readonly MatchEntry[]}>,
  ): Promise<Map<string, Map<string, LeadOwner>>> {
    const batch = new StatementBatch()
    const reads = customers.flatMap(({customerId, candidates}) => {
      const read = ownersRead(
        this.db,
        customerId,
        candidates.flatMap((entry) => (entry.lead.ownerId === null ? [] : [entry.lead.ownerId])),
      )
      return read ? [{customerId, owners: batch.read(read)}] : []
    })
    if (reads.length === 0) return new Map()
    await batch.send(trx)
    return new Map(reads.map(({customerId, owners}) => [customerId, owners()]))
  }

  /** Adds the match-key locks and the leads the drafts match to a write's reads. */
  private readCandidates(reads: StatementBatch, customerId: string, drafts: readonly LeadDraft[], lock: boolean): () => MatchEntry[] {
    const {locks, read} = matchCandidates(this.matches, customerId, drafts, lock)
    reads.add(...locks)
    return read ? reads.read(read) : () => []
  }
}

/** A bulk row's draft, or the validation error that refused it. */
type ParsedDraft = ReturnType<typeof attempt<LeadDraft>>

/** A bulk request's rows completed with the customer's setup, and their plan. */
interface PlannedBulk {
  rows: BulkRow[]
  plan: BulkPlan
}

function planBulkRequest(
  customerId: string,
  drafts: readonly ParsedDraft[],
  existing: MatchEntry[],
  known: CustomerSetup,
  onDuplicate: OnDuplicate,
  now: number,
): PlannedBulk {
  const rows: BulkRow[] = drafts.map((draft, index) => {
    const parsed = 'value' in draft ? attempt(() => completeLeadInput(draft.value, known)) : draft
    return 'value' in parsed ? {index, input: parsed.value} : {index, error: parsed.error}
  })
  return {rows, plan: planBulk(customerId, rows, existing, onDuplicate, {stageId: firstStageId(known.stages)}, now)}
}

/** A bulk row's parsed value, or the validation error that refused it (the row fails alone). */
function attempt<T>(parse: () => T): {value: T} | {error: {message: string; param?: string}} {
  try {
    return {value: parse()}
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error
    return {error: {message: error.message, ...(error.param ? {param: error.param} : {})}}
  }
}

function parseBulkRequest(body: unknown): {leads: unknown[]; dryRun: boolean; onDuplicate: OnDuplicate} {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError('body must be a JSON object: {"leads": [...], "dry_run"?: false, "on_duplicate"?: "update"}')
  }
  const copy = {...(body as Record<string, unknown>)}
  if (!validateBulk(copy)) throw toValidationError(validateBulk.errors?.[0], (param) => BULK_RULES[param], 'field')
  return {leads: copy['leads'] as unknown[], dryRun: copy['dry_run'] as boolean, onDuplicate: copy['on_duplicate'] as OnDuplicate}
}

/** A claimed key with the response its write stores. */
type CompletedKey = {claim: IdempotencyRecord; statusCode: number; responseBody: string}

function storedResponse<R>(key: NonNullable<WriteHooks<R>['key']>, outcome: R | AppError): CompletedKey {
  const {statusCode, body} = key.respond(outcome)
  return {claim: key.claim, statusCode, responseBody: body}
}

/** What the caller of a group's write keeps of its plan once it committed. */
function writtenGroup(plan: CreatePlan, way: WrittenGroup['way']): WrittenGroup {
  return {way, outcomes: plan.outcomes, deliveryIds: plan.deliveryIds, merging: plan.merging}
}

/** The group's creates per customer, customers in id order, so two groups lock their match keys in the same order. */
function byCustomerInLockOrder(requests: readonly CreateRequest[]): Array<[string, CreateRequest[]]> {
  const byCustomer = new Map<string, CreateRequest[]>()
  for (const request of requests) byCustomer.set(request.customerId, [...(byCustomer.get(request.customerId) ?? []), request])
  return [...byCustomer].sort(([a], [b]) => (a < b ? -1 : 1))
}

/**
 * A guess refused for its keys: one stored already, or still held by its first request; the
 * checked write then tells which. The guard's own refusals go on checked inside the transaction
 * (asNew's orElse).
 */
function isRefusedGuess(error: unknown): boolean {
  return isGuardRefusal(error) || isUniqueViolation(error) || isLockRefusal(error)
}

function firstStageId(stages: readonly Stage[]): string {
  const first = stages[0]
  if (!first) throw new AppError('api_error', 500, 'customer has no pipeline stages')
  return first.id
}

function unknownFieldReport(rows: BulkRow[]): Array<{slug: string; rows: number[]}> {
  const bySlug = new Map<string, number[]>()
  for (const row of rows) {
    for (const slug of row.input?.unknownCustomFields ?? []) bySlug.set(slug, [...(bySlug.get(slug) ?? []), row.index])
  }
  return [...bySlug].map(([slug, indexes]) => ({slug, rows: indexes}))
}
