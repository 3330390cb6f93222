import {createHash} from 'node:crypto'

import {configure} from 'safe-stable-stringify'

import {KeyClaimRefusal} from '../db/errors.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {ConflictError, InProgressError, ValidationError} from '../shared/errors.js'
import type {IdempotencyRecord, IdempotencyStore} from './idempotency-store.js'

const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255
/** An Idempotency-Key: printable ASCII, no spaces. The API document states the same schema. */
export const IDEMPOTENCY_KEY_SCHEMA = {type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH, pattern: '^[\\x21-\\x7E]+$'} as const
const KEY_PATTERN = new RegExp(IDEMPOTENCY_KEY_SCHEMA.pattern)

// Sorted keys and no whitespace: bodies that differ only in key order or spacing hash alike.
const canonicalJson = configure({deterministic: true, bigint: false})

/** A request under an Idempotency-Key: whose key, for which endpoint, and its body's fingerprint. */
interface IdempotencyTicket {
  customerId: string
  endpoint: string
  key: string
  requestHash: string
}

/** Why a write's claim failed: the key is stored already, or its first request still holds it. */
type ClaimRefusal = 'stored' | 'held'

export type IdempotencyDecision = {kind: 'replay'; statusCode: number; body: string} | {kind: 'retry'}

const IN_PROGRESS = 'A request with this Idempotency-Key is still in progress. Retry after it completes.'
const OTHER_BODY = 'Idempotency-Key was already used with a different request body. Use a new key for a new request.'

/**
 * Idempotency-Key handling. A write claims its key in its own transaction (see WriteHooks), so
 * the key, the change and the stored response commit together or not at all: a write that fails
 * leaves the key free for a retry. A refused claim is answered from the stored record.
 */
export class IdempotencyService {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Checks the key and fingerprints the body; throws ValidationError for a malformed key. */
  ticket(customerId: string, endpoint: string, key: string, body: unknown): IdempotencyTicket {
    if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH || !KEY_PATTERN.test(key)) {
      throw new ValidationError('Idempotency-Key must be 1 to 255 printable ASCII characters without spaces', 'Idempotency-Key')
    }
    const requestHash = createHash('sha256')
      .update(canonicalJson(body) ?? 'null')
      .digest('hex')
    return {customerId, endpoint, key, requestHash}
  }

  /** The record one attempt of the write claims in its transaction (IdempotencyStore.claimStatements). */
  claim(ticket: IdempotencyTicket): IdempotencyRecord {
    return this.record(ticket)
  }

  /** Whether a write failed because of its claim: the key is stored already, or held by a request still running. */
  refusal(error: unknown): ClaimRefusal | null {
    return error instanceof KeyClaimRefusal ? error.key : null
  }

  /**
   * What to do after a refused claim: replay the stored response, or retry (the record expired and
   * is gone now). Throws ConflictError for another body or a request in flight.
   */
  async afterRefusal(ticket: IdempotencyTicket, refusal: ClaimRefusal): Promise<IdempotencyDecision> {
    const existing = await this.store.find(ticket)
    // Held: the first request is still in its transaction. Stored but gone: purged since; claim again.
    if (!existing) {
      if (refusal === 'held') throw this.stillInProgress()
      return {kind: 'retry'}
    }
    return this.decide(ticket, existing)
  }

  /**
   * Stores a response that no write stored (a 4xx). Null when stored; when the key is stored
   * already, what to answer instead (the stored response); throws ConflictError like afterRefusal.
   */
  async storeAlone(ticket: IdempotencyTicket, statusCode: number, body: string): Promise<IdempotencyDecision | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await this.store.insertFinished({...this.record(ticket), statusCode, responseBody: body})) return null
      const existing = await this.store.find(ticket)
      if (!existing) continue
      const decision = await this.decide(ticket, existing)
      if (decision.kind === 'replay') return decision
    }
    throw this.stillInProgress()
  }

  /**
   * The answer for a key refused on every attempt, each time for a record gone before it could be
   * read: other requests keep claiming it and failing, or it keeps expiring. A retry gets through.
   */
  stillInProgress(): InProgressError {
    return new InProgressError(IN_PROGRESS)
  }

  /** Removes keys older than 24 h. */
  purgeExpired(): Promise<number> {
    return this.store.deleteExpired(this.clock.now())
  }

  private async decide(ticket: IdempotencyTicket, existing: IdempotencyRecord): Promise<IdempotencyDecision> {
    if (existing.expiresAt <= this.clock.now()) {
      await this.store.remove(existing)
      return {kind: 'retry'}
    }
    if (existing.requestHash !== ticket.requestHash) throw new ConflictError(OTHER_BODY)
    if (existing.statusCode === null) throw this.stillInProgress()
    return {kind: 'replay', statusCode: existing.statusCode, body: existing.responseBody ?? ''}
  }

  private record(ticket: IdempotencyTicket): IdempotencyRecord {
    const now = this.clock.now()
    return {...ticket, statusCode: null, responseBody: null, claimedAt: now, expiresAt: now + IDEMPOTENCY_TTL_MS}
  }
}
