import type {Db} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import type {ApiKey, ListedKey, TokenGrant} from './key-types.js'
import type {Scope} from './scopes.js'

interface KeyRow {
  id: string
  customer_id: string
  name: string | null
  scopes: string
  internal: number | boolean
  created_at: number | string
  expires_at: number | string | null
  revoked_at: number | string | null
  last_used_at: number | string | null
}

/** SQL for API keys and their token hashes. */
export class KeysStore {
  constructor(private readonly db: Db) {}

  async insertKey(key: ApiKey, tokenHash: string): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      await trx('api_keys').insert(keyToRow(key))
      await trx('api_tokens').insert({token_hash: tokenHash, key_id: key.id, created_at: key.createdAt, retires_at: null})
    })
  }

  async findKey(id: string): Promise<ApiKey | null> {
    const row = (await this.db('api_keys').where({id}).first()) as KeyRow | undefined
    return row ? rowToKey(row) : null
  }

  /** Keys in the order they were issued, each with when its previous tokens stop if some still work at `now`. */
  async listKeys(now: number, customerId?: string): Promise<ListedKey[]> {
    const retiring = this.db('api_tokens')
      .max('retires_at')
      .where('api_tokens.key_id', this.db.ref('api_keys.id'))
      .andWhere('api_tokens.retires_at', '>', now)
      .as('previous_tokens_retire_at')
    const query = this.db('api_keys')
      .select('api_keys.*', retiring)
      .orderBy([{column: 'created_at'}, {column: 'id'}])
    if (customerId !== undefined) query.where({customer_id: customerId})
    const rows = (await query) as Array<KeyRow & {previous_tokens_retire_at: number | string | null}>
    return rows.map((row) => ({...rowToKey(row), previousTokensRetireAt: toMsOrNull(row.previous_tokens_retire_at)}))
  }

  /** Looks a token up by its hash; null when no key holds it. */
  async findByTokenHash(tokenHash: string): Promise<TokenGrant | null> {
    const row = (await this.db('api_tokens')
      .join('api_keys', 'api_keys.id', 'api_tokens.key_id')
      .where('api_tokens.token_hash', tokenHash)
      .first('api_keys.*', 'api_tokens.retires_at as token_retires_at')) as (KeyRow & {token_retires_at: number | string | null}) | undefined
    return row ? {key: rowToKey(row), tokenRetiresAt: toMsOrNull(row.token_retires_at)} : null
  }

  /**
   * The token hashes of every internal key not revoked, of all customers (few: the operator's own
   * jobs), so the address guard can tell an internal key's token from a guess without a lookup.
   */
  async internalTokenHashes(): Promise<string[]> {
    const rows = (await this.db('api_tokens')
      .join('api_keys', 'api_keys.id', 'api_tokens.key_id')
      .where('api_keys.internal', true)
      .whereNull('api_keys.revoked_at')
      .select('api_tokens.token_hash')) as Array<{token_hash: string}>
    return rows.map((row) => row.token_hash)
  }

  /**
   * Adds a token to the key and retires its other live tokens at `retireAt`, in one transaction,
   * so a rotation never leaves the key with no working token or with an extra one.
   */
  async rotateToken(keyId: string, tokenHash: string, now: number, retireAt: number): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      await trx('api_tokens')
        .where({key_id: keyId})
        .andWhere((q) => q.whereNull('retires_at').orWhere('retires_at', '>', retireAt))
        .update({retires_at: retireAt})
      await trx('api_tokens').insert({token_hash: tokenHash, key_id: keyId, created_at: now, retires_at: null})
    })
  }

  /** Marks the key revoked unless it already is; true when this call revoked it. */
  async revokeKey(keyId: string, now: number): Promise<boolean> {
    return (await this.db('api_keys').where({id: keyId}).whereNull('revoked_at').update({revoked_at: now})) > 0
  }

  /** Writes the latest use time of many keys at once; never moves a time backwards. */
  async recordLastUsed(lastUsed: ReadonlyMap<string, number>): Promise<void> {
    if (lastUsed.size === 0) return
    await inTransaction(this.db, async (trx) => {
      for (const [keyId, at] of lastUsed) {
        await trx('api_keys')
          .where({id: keyId})
          .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', at))
          .update({last_used_at: at})
      }
    })
  }
}

function toMsOrNull(value: number | string | null): number | null {
  return value === null ? null : Number(value)
}

function rowToKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    customerId: row.customer_id,
    name: row.name,
    scopes: row.scopes.split(' ').filter(Boolean) as Scope[],
    internal: Boolean(row.internal),
    createdAt: Number(row.created_at),
    expiresAt: toMsOrNull(row.expires_at),
    revokedAt: toMsOrNull(row.revoked_at),
    lastUsedAt: toMsOrNull(row.last_used_at),
  }
}

function keyToRow(key: ApiKey): KeyRow {
  return {
    id: key.id,
    customer_id: key.customerId,
    name: key.name,
    scopes: key.scopes.join(' '),
    internal: key.internal,
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    revoked_at: key.revokedAt,
    last_used_at: key.lastUsedAt,
  }
}
