import type {IdempotencyRecord} from '../idempotency/idempotency-store.js'
import type {Stage} from '../customers/customer-types.js'
import {AppError} from '../shared/errors.js'
import type {RowOutcome} from './bulk-plan.js'
import type {LeadWithRelations} from './lead-rows.js'

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
}

/** A write with nothing added by its caller (no Idempotency-Key). */
export const NO_HOOKS: WriteHooks<never> = {}

/** A claimed key with the response its write stores. */
export type CompletedKey = {claim: IdempotencyRecord; statusCode: number; responseBody: string}

export function storedResponse<R>(key: NonNullable<WriteHooks<R>['key']>, outcome: R | AppError): CompletedKey {
  const {statusCode, body} = key.respond(outcome)
  return {claim: key.claim, statusCode, responseBody: body}
}

export function firstStageId(stages: readonly Stage[]): string {
  const first = stages[0]
  if (!first) throw new AppError('api_error', 500, 'customer has no pipeline stages')
  return first.id
}
