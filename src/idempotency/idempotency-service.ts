import {createHash} from 'node:crypto'

import type {Knex} from 'knex'
import {configure} from 'safe-stable-stringify'

import {type Clock, systemClock} from '../shared/clock.js'
import {ConflictError, ValidationError} from '../shared/errors.js'
import type {IdempotencyRecord, IdempotencyStore} from './idempotency-store.js'

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
/** An unfinished claim older than this belongs to a request that died; a retry may take it over. */
export const IDEMPOTENCY_LEASE_MS = 60_000
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

// Sorted keys and no whitespace: bodies that differ only in key order or spacing hash alike.
const canonicalJson = configure({deterministic: true, bigint: false})

export type IdempotencyClaim = IdempotencyRecord

export type IdempotencyDecision =
  | {kind: 'proceed'; claim: IdempotencyClaim}
  | {kind: 'replay'; statusCode: number; body: string}

/** Idempotency-Key handling: claim a key, replay its stored response, or refuse a conflicting reuse. */
export class IdempotencyService {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Claims `key` for this request, or says to replay the response stored under it. Throws
   * ConflictError when the key was used with another body or its first request is still running.
   */
  async begin(customerId: string, endpoint: string, key: string, body: unknown): Promise<IdempotencyDecision> {
    if (!KEY_PATTERN.test(key)) {
      throw new ValidationError('Idempotency-Key must be 1 to 255 printable ASCII characters without spaces', 'Idempotency-Key')
    }
    const requestHash = createHash('sha256').update(canonicalJson(body) ?? 'null').digest('hex')
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.now()
      const claim: IdempotencyClaim = {customerId, endpoint, key, requestHash, statusCode: null, responseBody: null, claimedAt: now, expiresAt: now + IDEMPOTENCY_TTL_MS}
      if (await this.store.insertClaim(claim)) return {kind: 'proceed', claim}

      const existing = await this.store.find(claim)
      if (!existing) continue
      const abandoned = existing.statusCode === null && now - existing.claimedAt >= IDEMPOTENCY_LEASE_MS
      if (existing.expiresAt <= now || (abandoned && existing.requestHash === requestHash)) {
        if (await this.store.takeOver(existing, claim)) return {kind: 'proceed', claim}
        continue
      }
      if (existing.requestHash !== requestHash) {
        throw new ConflictError('Idempotency-Key was already used with a different request body. Use a new key for a new request.')
      }
      if (existing.statusCode === null) {
        throw new ConflictError('A request with this Idempotency-Key is still in progress. Retry after it completes.')
      }
      return {kind: 'replay', statusCode: existing.statusCode, body: existing.responseBody ?? ''}
    }
    throw new ConflictError('A request with this Idempotency-Key is still in progress. Retry after it completes.')
  }

  /** Stores the response for the claim, inside the transaction of the write it answers. */
  complete(trx: Knex | Knex.Transaction, claim: IdempotencyClaim, statusCode: number, body: string): Promise<void> {
    return this.store.complete(trx, claim, statusCode, body)
  }

  /** Frees the key after a failure that is not stored (5xx, 429), so a retry runs again. */
  release(claim: IdempotencyClaim): Promise<void> {
    return this.store.release(claim)
  }

  /** Removes keys older than 24 h. */
  purgeExpired(): Promise<number> {
    return this.store.deleteExpired(this.clock.now())
  }
}
