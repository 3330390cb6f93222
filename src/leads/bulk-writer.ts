import {StatementBatch, type Statement} from '../db/statements.js'
import {inWriteTransaction, type WriteTransaction} from '../db/write-transaction.js'
import type {Db} from '../db/knex.js'
import type {IdempotencyStore} from '../idempotency/idempotency-store.js'
import {bodyAjv, compileOnFirstUse, toValidationError} from '../shared/ajv.js'
import type {Clock} from '../shared/clock.js'
import {ValidationError} from '../shared/errors.js'
import {textProblem} from '../shared/text.js'
import type {BulkGuess} from './bulk-guess.js'
import {type BulkPlan, type BulkRow, ON_DUPLICATE, type OnDuplicate, planBulk} from './bulk-plan.js'
import {completeLeadInput, type CustomerSetup, type LeadDraft, readLeadDraft} from './lead-input.js'
import type {MatchEntry} from './lead-matching.js'
import type {LeadWriteStatements} from './lead-write-statements.js'
import type {WriteReads} from './write-reads.js'
import {type BulkResult, firstStageId, NO_HOOKS, storedResponse, type WriteHooks} from './write-types.js'

const BULK_MAX_ROWS = 500

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

/** POST /leads/bulk: up to 500 rows created, merged or skipped in a few statements; rows fail independently; no events. */
export class BulkWriter {
  constructor(
    private readonly db: Db,
    private readonly leads: LeadWriteStatements,
    private readonly reads: WriteReads,
    private readonly idempotency: IdempotencyStore,
    private readonly guess: BulkGuess,
    private readonly clock: Clock,
  ) {}

  /** Creates, merges or skips up to 500 rows in a few statements; rows fail independently; no events. */
  async bulk(customerId: string, body: unknown, hooks: WriteHooks<BulkResult> = NO_HOOKS): Promise<BulkResult> {
    const request = parseBulkRequest(body)
    const drafts = request.leads.map((raw) => attempt(() => readLeadDraft(raw)))
    const write = !request.dryRun
    return inWriteTransaction(this.db, async (trx) => {
      const reads = new StatementBatch().add(...this.idempotency.claimStatements(hooks.key ? [hooks.key.claim] : []))
      const setup = this.reads.setup(reads, customerId)
      // A dry run reads without locking and writes nothing.
      const candidates = this.reads.candidates(
        reads,
        customerId,
        drafts.flatMap((draft) => ('value' in draft ? [draft.value] : [])),
        write,
      )
      const answered = reads.send(trx)
      // Planned (synchronously) while the database takes the match-key locks and reads the candidates.
      const guessed = write ? this.guessAllNew(trx, customerId, drafts, request.onDuplicate) : null
      await answered
      const {setup: known} = await setup(trx)
      const existing = candidates()
      const holds = write && this.guess.holds(customerId, guessed?.setup ?? null, known, existing)
      const planned = holds ? guessed! : planBulkRequest(customerId, drafts, existing, known, request.onDuplicate, this.clock.now())
      // The leads go ahead: the database writes them (the larger part of its work) while their
      // counts, search words and the stored response are built.
      if (write) trx.sendAhead(holds ? guessed!.leadRows : this.leads.upsertRows(planned.plan.writes))
      const result = {dryRun: request.dryRun, outcomes: planned.plan.outcomes, unknownCustomFields: unknownFieldReport(request.leads, known)}
      const derived = write ? this.leads.derivedFromUpsert(planned.plan.writes, new Map(existing.map((entry) => [entry.lead.id, entry.lead]))) : []
      const stored = hooks.key ? this.idempotency.completeStatements([storedResponse(hooks.key, result)]) : []
      return {value: result, commitWith: [...derived, ...stored]}
    })
  }

  /** The request planned on the bulk guess, with its leads' insert written out; null when the guess does not apply. */
  private guessAllNew(
    trx: WriteTransaction,
    customerId: string,
    drafts: readonly ParsedDraft[],
    onDuplicate: OnDuplicate,
  ): (PlannedBulk & {setup: CustomerSetup; leadRows: Statement[]}) | null {
    const setup = this.guess.assumedSetup(customerId)
    if (!setup) return null
    const planned = planBulkRequest(customerId, drafts, [], setup, onDuplicate, this.clock.now())
    return {...planned, setup, leadRows: trx.format(this.leads.upsertRows(planned.plan.writes))}
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

/**
 * The slugs the rows name that the customer does not define, read from the rows as sent: a row
 * that failed (its contact, a known field's value, on_duplicate) is listed too, so that one pass
 * over the report finds every renamed field. A key that is not well-formed text is no slug anyone
 * defined, and its row fails for it.
 */
function unknownFieldReport(leads: readonly unknown[], setup: CustomerSetup): Array<{slug: string; rows: number[]}> {
  const bySlug = new Map<string, number[]>()
  leads.forEach((raw, index) => {
    const values = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>)['custom_fields'] : undefined
    if (values === null || typeof values !== 'object' || Array.isArray(values)) return
    for (const slug of Object.keys(values)) {
      if (setup.fields.has(slug) || textProblem(slug, 'line') !== null) continue
      bySlug.set(slug, [...(bySlug.get(slug) ?? []), index])
    }
  })
  return [...bySlug].map(([slug, indexes]) => ({slug, rows: indexes}))
}
