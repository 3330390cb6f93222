import {gunzipSync, gzipSync} from 'node:zlib'

import {isMysql, type Db, serverFlavor} from '../db/knex.js'
import {isUniqueViolation} from '../db/errors.js'
import {insertChunks, keyClaim, type Statement} from '../db/statements.js'

export interface IdempotencyRecord {
  customerId: string
  endpoint: string
  key: string
  requestHash: string
  /** Null while the first request is still running (only records written before claims moved into the write's transaction stay so). */
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
  /** The response gzipped, when it is GZIP_FROM_LENGTH characters or more (response_body is then null). */
  response_gzip: Buffer | null
  claimed_at: number | string
  expires_at: number | string
}

/**
 * Responses from this length on are stored gzipped: a bulk response of 500 rows shrinks to about
 * a sixth, and writing and escaping that costs less than the gzip does. A single create's
 * response stays text.
 */
export const GZIP_FROM_LENGTH = 8 * 1024
/** The fastest level: JSON of many similar rows still shrinks sixfold. */
const GZIP_LEVEL = 1

type Identity = Pick<IdempotencyRecord, 'customerId' | 'endpoint' | 'key'>

/** SQL for Idempotency-Key records. */
export class IdempotencyStore {
  constructor(private readonly db: Db) {}

  /**
   * The statements that claim keys at the start of a write's transaction (several writes grouped
   * in one transaction claim theirs together): see claims.
   */
  claimStatements(records: readonly IdempotencyRecord[]): Statement[] {
    return this.claims(records.map(toRow))
  }

  /**
   * Claims keys and stores their responses at once, for a write sent whole in one round trip: the
   * finished records, claimed as claimStatements claims.
   */
  claimAnsweredStatements(entries: ReadonlyArray<{claim: IdempotencyRecord; statusCode: number; responseBody: string}>): Statement[] {
    return this.claims(entries.map(({claim, statusCode, responseBody}) => toRow({...claim, statusCode, responseBody})))
  }

  /** Stores the responses of claimed keys: one statement that goes out with the write's COMMIT. */
  completeStatements(entries: ReadonlyArray<{claim: IdempotencyRecord; statusCode: number; responseBody: string}>): Statement[] {
    if (entries.length === 0) return []
    const rows = entries.map(({claim, statusCode, responseBody}) => toRow({...claim, statusCode, responseBody}))
    return insertChunks(this.db, 'idempotency_keys', rows, {
      keys: ['customer_id', 'endpoint', 'idempotency_key'],
      update: ['status_code', 'response_body', 'response_gzip'],
    })
  }

  /**
   * The inserts of the keys' rows. A key stored already fails them (a duplicate); a key whose first
   * request is still in its transaction must fail them at once, not make the claim wait for that
   * request. On MariaDB the insert runs with no lock wait (`SET STATEMENT
   * innodb_lock_wait_timeout=0 FOR`): under READ COMMITTED a new key's row waits only for a row of
   * the same key, so a lock-wait timeout means the key is held. MySQL 8 waits at least 1 s: there
   * a locking read with NOWAIT goes first, one statement more. SQLite has one writer. Each is a
   * keyClaim: a taken key fails it with KeyClaimRefusal.
   */
  private claims(rows: readonly Row[]): Statement[] {
    if (rows.length === 0) return []
    const inserts = insertChunks(this.db, 'idempotency_keys', rows)
    if (serverFlavor(this.db) === 'mariadb')
      return inserts.map(({sql, bindings}) => keyClaim({sql: `SET STATEMENT innodb_lock_wait_timeout=0 FOR ${sql}`, bindings}))
    return [...this.heldRead(rows), ...inserts].map(keyClaim)
  }

  /**
   * MySQL: a locking read with NOWAIT that fails at once on a key whose first request is still in
   * its transaction. The keys of one customer and endpoint go in one IN list, which MariaDB planned
   * faster than an OR of whole keys.
   */
  private heldRead(rows: readonly Row[]): Statement[] {
    if (!isMysql(this.db)) return []
    const byScope = new Map<string, {customerId: string; endpoint: string; keys: string[]}>()
    for (const {customer_id: customerId, endpoint, idempotency_key: key} of rows) {
      const scope = `${customerId} ${endpoint}`
      const entry = byScope.get(scope) ?? byScope.set(scope, {customerId, endpoint, keys: []}).get(scope)!
      entry.keys.push(key)
    }
    const scopes = [...byScope.values()]
    const each = (keys: readonly string[]) => `(\`customer_id\` = ? AND \`endpoint\` = ? AND \`idempotency_key\` IN (${keys.map(() => '?').join(', ')}))`
    return [
      {
        sql: `SELECT \`status_code\` FROM \`idempotency_keys\` WHERE ${scopes.map((scope) => each(scope.keys)).join(' OR ')} FOR UPDATE NOWAIT`,
        bindings: scopes.flatMap((scope) => [scope.customerId, scope.endpoint, ...scope.keys]),
      },
    ]
  }

  /** Inserts a finished record on its own (a response no write stored); false when the key is already stored. */
  async insertFinished(record: IdempotencyRecord): Promise<boolean> {
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

  /** Deletes an expired or abandoned record, unless somebody replaced it meanwhile (compare-and-set on claimed_at). */
  async remove(record: IdempotencyRecord): Promise<void> {
    await this.db('idempotency_keys').where(where(record)).andWhere('claimed_at', record.claimedAt).delete()
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
  const body = record.responseBody
  const gzipped = body !== null && body.length >= GZIP_FROM_LENGTH
  return {
    customer_id: record.customerId,
    endpoint: record.endpoint,
    idempotency_key: record.key,
    request_hash: record.requestHash,
    status_code: record.statusCode,
    response_body: gzipped ? null : body,
    response_gzip: gzipped ? gzipSync(body, {level: GZIP_LEVEL}) : null,
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
    responseBody: row.response_gzip ? gunzipSync(row.response_gzip).toString('utf8') : row.response_body,
    claimedAt: Number(row.claimed_at),
    expiresAt: Number(row.expires_at),
  }
}
