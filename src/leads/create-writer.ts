import {isGuardRefusal} from '../db/errors.js'
import {GroupCommitter, type Settled} from '../db/group-commit.js'
import type {Db} from '../db/knex.js'
import {guardStatement, StatementBatch, type Statement} from '../db/statements.js'
import {inWriteTransaction, type WriteOutcome, type WriteTransaction} from '../db/write-transaction.js'
import type {DeliveryOutbox} from '../deliveries/outbox.js'
import type {EventsStore, StoredEvent} from '../events/events-store.js'
import {LEAD_CREATED, leadCreatedSnapshot} from '../events/lead-created.js'
import type {IdempotencyStore} from '../idempotency/idempotency-store.js'
import type {Clock} from '../shared/clock.js'
import {AppError} from '../shared/errors.js'
import {completeLeadInput, type CustomerSetup, type LeadDraft, readLeadDraft} from './lead-input.js'
import {type CreateGuess, isRefusedGuess, type KeptForGuess} from './create-guess.js'
import {type MatchEntry, MatchPool} from './lead-matching.js'
import {mergeLead, newLead} from './lead-merge.js'
import {type LeadOwner, stagesById, withStageAndOwner} from './lead-rows.js'
import type {LeadRecord} from './lead-types.js'
import type {LeadWriteStatements} from './lead-write-statements.js'
import type {WriteReads} from './write-reads.js'
import {type CompletedKey, type CreateResult, firstStageId, NO_HOOKS, storedResponse, type WriteHooks} from './write-types.js'

/**
 * How single creates are grouped (GroupCommitter). One group in flight: the creates that arrive
 * meanwhile make the next one, which costs less CPU per create than two groups in flight
 * (docs/design.md, "How a write is done"; measured by bench/compare-builds.ts). A group whose COMMIT is under way no longer counts: the COMMIT waits for
 * the redo log's write to the disk, and the next group's statements can run meanwhile.
 */
const CREATE_GROUPS = {maxInFlight: 1, maxGroup: 64, slowMs: 50}

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
 * POST /leads: a create, merged by email or phone into the customer's matching lead. Creates that
 * arrive together are written together, in one transaction per group (see CREATE_GROUPS).
 */
export class CreateWriter {
  constructor(
    private readonly db: Db,
    private readonly leads: LeadWriteStatements,
    private readonly reads: WriteReads,
    private readonly events: EventsStore,
    private readonly outbox: DeliveryOutbox,
    private readonly idempotency: IdempotencyStore,
    private readonly guess: CreateGuess,
    private readonly clock: Clock,
  ) {}

  /** How groups of creates were written since start (for the metrics): as new, checked, and guesses refused. */
  readonly groupsWritten = {asNew: 0, checked: 0, guessRefused: 0}

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
   * were a new person, in one round trip (asNew); when its checks refuse that guess, the same
   * transaction goes on checked (checked, without claiming the keys again). A guess refused for
   * its Idempotency-Keys (one stored, or still held by its first request) is rolled back and the
   * group written checked from the start, which tells which. A create refused by its input fails
   * alone (its hooks store the refusal); anything else fails the group, which GroupCommitter then
   * writes create by create.
   */
  private async writeCreates(requests: readonly CreateRequest[], release: () => void): Promise<Array<Settled<CreateResult>>> {
    const kept = this.guess.kept(requests)
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
    this.guess.rememberMerging(
      requests.map((request) => request.customerId),
      written.merging,
    )
    await this.outbox.dispatch(written.deliveryIds)
    return written.outcomes
  }

  /**
   * The guess: no stored lead matches any create of the group, and each customer's setup and
   * subscribers are as kept. Everything the group writes goes out with its checks and the COMMIT
   * in one batch: the key claims (with their responses), the match keys registered as new (an
   * insert refused when a key's row exists, and which waits for a concurrent write of the same
   * person to end first), one guard statement that fails the batch when the setup version moved
   * (guardStatement), then the writes. The claims come before the registrations: a key still held
   * by its first request (which holds that person's keys too) must be refused at once, not waited on.
   */
  private async asNew(trx: WriteTransaction, requests: readonly CreateRequest[], kept: ReadonlyMap<string, KeptForGuess>): Promise<WriteOutcome<WrittenGroup>> {
    const registrations: Statement[] = []
    const probes: Statement[] = []
    const customers = byCustomerInLockOrder(requests).map(([customerId, members]) => {
      const assumed = kept.get(customerId)!
      const checks = this.guess.checks(
        customerId,
        members.map((member) => member.draft),
        assumed,
      )
      registrations.push(...checks.registrations)
      probes.push(...checks.probes)
      return {customerId, members, known: assumed.setup, candidates: [], owners: new Map(), subscribers: assumed.subscribers}
    })
    const plan = this.planCreates(requests, customers)
    return {
      value: writtenGroup(plan, 'asNew'),
      commitWith: [...this.idempotency.claimAnsweredStatements(plan.responses), ...registrations, guardStatement(probes), ...plan.writes],
      // What ran before the refusal holds: the keys are claimed (with the guessed responses, overwritten below).
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
      setup: this.reads.setup(reads, customerId),
      candidates: this.reads.candidates(
        reads,
        customerId,
        members.map((member) => member.draft),
        true,
      ),
      subscribers: reads.read(this.outbox.subscribersRead(customerId, LEAD_CREATED)),
    }))
    await reads.send(trx)
    const owners = await this.reads.owners(
      trx,
      pending.map((customer) => ({customerId: customer.customerId, candidates: customer.candidates()})),
    )
    const customers: PlannedCustomer[] = []
    for (const customer of pending) {
      const setup = await customer.setup(trx)
      const subscribers = customer.subscribers()
      this.guess.rememberSubscribers(customer.customerId, setup, subscribers)
      const candidates = customer.candidates()
      customers.push({
        customerId: customer.customerId,
        members: customer.members,
        known: setup.setup,
        candidates,
        owners: owners.get(customer.customerId) ?? new Map(),
        subscribers,
      })
    }
    const plan = this.planCreates(requests, customers)
    return {
      value: writtenGroup(plan, way),
      commitWith: [...plan.writes, ...this.idempotency.completeStatements(plan.responses)],
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
    return {
      outcomes: requests.map((request) => settled.get(request)!),
      writes: [...leadWrites, ...this.events.insertStatements(events), ...outbox.statements],
      responses,
      deliveryIds: outbox.ids,
      merging,
    }
  }
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
