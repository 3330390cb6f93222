import type {Knex} from 'knex'

import type {CustomersStore} from '../customers/customers-store.js'
import type {Db} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import type {DeliveryOutbox} from '../deliveries/outbox.js'
import type {EventsStore} from '../events/events-store.js'
import {LEAD_CREATED, leadCreatedSnapshot} from '../events/lead-created.js'
import {bodyAjv, toValidationError} from '../shared/ajv.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {AppError, ValidationError} from '../shared/errors.js'
import {type BulkRow, ON_DUPLICATE, type OnDuplicate, planBulk, type RowOutcome} from './bulk-plan.js'
import {type CustomerSetup, type LeadInput, parseLeadInput} from './lead-input.js'
import {mergeLead, newLead} from './lead-merge.js'
import {findMatch, matchCandidates} from './lead-matching.js'
import type {LeadRecord} from './lead-types.js'
import type {LeadsStore, LeadWithRelations} from './leads-store.js'

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
const validateBulk = bodyAjv.compile(BULK_REQUEST_SCHEMA)

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

/** Runs inside the write's transaction just before it commits (the idempotency record goes here). */
export type BeforeCommit<R> = (trx: Knex.Transaction, result: R) => Promise<void>

/**
 * Pushing leads: single create with merge by email or phone, and set-based bulk create.
 * Writers lock the match keys of their rows first, so concurrent pushes of one person end as
 * one lead on either backend.
 */
export class LeadsWriteService {
  constructor(
    private readonly db: Db,
    private readonly leads: LeadsStore,
    private readonly customers: CustomersStore,
    private readonly events: EventsStore,
    private readonly outbox: DeliveryOutbox,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Creates a lead or merges it into the customer's matching lead; only a genuine insert records lead.created. */
  async create(customerId: string, body: unknown, beforeCommit?: BeforeCommit<CreateResult>): Promise<CreateResult> {
    const setup = await this.setup(customerId)
    const input = parseLeadInput(body, setup)
    let deliveryIds: string[] = []
    const result = await inTransaction(this.db, async (trx) => {
      // A deadlock retry runs this again: only the attempt that commits may leave ids to dispatch.
      deliveryIds = []
      const existing = findMatch(await matchCandidates(this.leads, trx, customerId, [input], trx), input)?.lead
      const now = this.clock.now()
      let record: LeadRecord
      if (existing) {
        record = mergeLead(existing, input, now)
        await this.leads.update(trx, record, existing)
      } else {
        record = newLead(customerId, input, {stageId: firstStageId(setup), sourceType: 'manual'}, now)
        await this.leads.insertMany([record], trx)
      }
      const [lead] = (await this.leads.withRelations(customerId, [record], trx, setup.stages)) as [LeadWithRelations]
      if (!existing) {
        const event = await this.events.insert(trx, {customerId, type: LEAD_CREATED, leadId: lead.id, payload: leadCreatedSnapshot(lead), createdAt: now})
        deliveryIds = await this.outbox.record(trx, {id: event.id, customerId, type: LEAD_CREATED, createdAt: now})
      }
      const created = {lead, merged: existing !== undefined, unknownCustomFields: input.unknownCustomFields}
      await beforeCommit?.(trx, created)
      return created
    })
    await this.outbox.dispatch(deliveryIds)
    return result
  }

  /** Creates, merges or skips up to 500 rows in a few statements; rows fail independently; no events. */
  async bulk(customerId: string, body: unknown, beforeCommit?: BeforeCommit<BulkResult>): Promise<BulkResult> {
    const request = parseBulkRequest(body)
    const setup = await this.setup(customerId)
    const rows: BulkRow[] = request.leads.map((raw, index) => {
      try {
        return {index, input: parseLeadInput(raw, setup)}
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error
        return {index, error: {message: error.message, ...(error.param ? {param: error.param} : {})}}
      }
    })
    const inputs = rows.flatMap((row) => (row.input ? [row.input] : []))
    const unknownCustomFields = unknownFieldReport(rows)

    const run = async (trx: Knex | Knex.Transaction, write: Knex.Transaction | null): Promise<BulkResult> => {
      const existing = await matchCandidates(this.leads, trx, customerId, inputs, write)
      const plan = planBulk(customerId, rows, existing, request.onDuplicate, {stageId: firstStageId(setup)}, this.clock.now())
      const result = {dryRun: request.dryRun, outcomes: plan.outcomes, unknownCustomFields}
      if (write) {
        await this.leads.upsertMany(write, plan.writes, new Map(existing.map((entry) => [entry.lead.id, entry.lead])))
        await beforeCommit?.(write, result)
      }
      return result
    }
    // A dry run reads without locking and writes nothing.
    if (request.dryRun) return run(this.db, null)
    return inTransaction(this.db, (trx) => run(trx, trx))
  }

  private async setup(customerId: string): Promise<CustomerSetup> {
    const [stages, fields] = await Promise.all([this.customers.listStages(customerId), this.customers.listFields(customerId)])
    return {stages, fields: new Map(fields.map((field) => [field.slug, field]))}
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

function firstStageId(setup: CustomerSetup): string {
  const first = setup.stages[0]
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
