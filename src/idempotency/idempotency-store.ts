import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {isUniqueViolation} from '../db/errors.js'

export interface IdempotencyRecord {
  customerId: string
  endpoint: string
  key: string
  requestHash: string
  /** Null while the first request is still running. */
  statusCode: number | null
  responseBody: string | null
  claimedAt: number
  expiresAt: number
}

interface Row {
  customer_id: string
  endpoint: string
  idempotency_key: string
  request_hash: string
  status_code: number | null
  response_body: string | null
  claimed_at: number | string
  expires_at: number | string
}

type Identity = Pick<IdempotencyRecord, 'customerId' | 'endpoint' | 'key'>

/** SQL for Idempotency-Key records. */
export class IdempotencyStore {
  constructor(private readonly db: Db) {}

  /** Inserts a claim; false when a record for the key already exists. */
  async insertClaim(record: IdempotencyRecord): Promise<boolean> {
    try {
      await this.db('idempotency_keys').insert(toRow(record))
      return true
    } catch (error) {
      if (isUniqueViolation(error)) return false
      throw error
    }
  }

  async find(identity: Identity): Promise<IdempotencyRecord | null> {
    const row = (await this.db('idempotency_keys').where(where(identity)).first()) as Row | undefined
    return row ? fromRow(row) : null
  }

  /** Replaces an expired or abandoned record, if nobody else replaced it first (compare-and-set on claimed_at). */
  async takeOver(previous: IdempotencyRecord, next: IdempotencyRecord): Promise<boolean> {
    const updated = await this.db('idempotency_keys')
      .where(where(previous))
      .andWhere('claimed_at', previous.claimedAt)
      .update({request_hash: next.requestHash, status_code: null, response_body: null, claimed_at: next.claimedAt, expires_at: next.expiresAt})
    return updated === 1
  }

  /** Stores the response of a claim; runs in the caller's transaction when given one. */
  async complete(trx: Knex | Knex.Transaction, claim: IdempotencyRecord, statusCode: number, responseBody: string): Promise<void> {
    await trx('idempotency_keys')
      .where(where(claim))
      .andWhere('claimed_at', claim.claimedAt)
      .update({status_code: statusCode, response_body: responseBody})
  }

  /** Drops an unfinished claim so the request can be retried with the same key. */
  async release(claim: IdempotencyRecord): Promise<void> {
    await this.db('idempotency_keys').where(where(claim)).andWhere('claimed_at', claim.claimedAt).whereNull('status_code').delete()
  }

  /** Deletes records past their expiry; returns how many. */
  async deleteExpired(now: number): Promise<number> {
    return this.db('idempotency_keys').where('expires_at', '<=', now).delete()
  }
}

function where(identity: Identity): Record<string, string> {
  return {customer_id: identity.customerId, endpoint: identity.endpoint, idempotency_key: identity.key}
}

function toRow(record: IdempotencyRecord): Row {
  return {
    customer_id: record.customerId,
    endpoint: record.endpoint,
    idempotency_key: record.key,
    request_hash: record.requestHash,
    status_code: record.statusCode,
    response_body: record.responseBody,
    claimed_at: record.claimedAt,
    expires_at: record.expiresAt,
  }
}

function fromRow(row: Row): IdempotencyRecord {
  return {
    customerId: row.customer_id,
    endpoint: row.endpoint,
    key: row.idempotency_key,
    requestHash: row.request_hash,
    statusCode: row.status_code === null ? null : Number(row.status_code),
    responseBody: row.response_body,
    claimedAt: Number(row.claimed_at),
    expiresAt: Number(row.expires_at),
  }
}
