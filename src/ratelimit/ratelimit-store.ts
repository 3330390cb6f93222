import type {Db} from '../db/knex.js'
import type {LimitOverride, OverrideScope} from './limits.js'

interface Row {
  scope_type: string
  scope_id: string
  per_minute: number | null
  per_hour: number | null
  bulk_per_minute: number | null
  updated_at: number | string
}

/** SQL for rate-limit overrides. */
export class RateLimitStore {
  constructor(private readonly db: Db) {}

  async find(scope: OverrideScope): Promise<LimitOverride | null> {
    const row = (await this.db('rate_limit_overrides').where({scope_type: scope.type, scope_id: scope.id}).first()) as Row | undefined
    return row ? fromRow(row) : null
  }

  /** The key's override and its customer's, in one query. */
  async findForKey(keyId: string, customerId: string): Promise<{key: LimitOverride | null; customer: LimitOverride | null}> {
    const rows = (await this.db('rate_limit_overrides').where((q) =>
      q.where({scope_type: 'key', scope_id: keyId}).orWhere({scope_type: 'customer', scope_id: customerId}),
    )) as Row[]
    const overrides = rows.map(fromRow)
    return {
      key: overrides.find((o) => o.scope.type === 'key') ?? null,
      customer: overrides.find((o) => o.scope.type === 'customer') ?? null,
    }
  }

  /**
   * Every override with the customer it belongs to (a key's through the key), customers first;
   * with `customerId`, that customer's and its keys' only.
   */
  async list(customerId?: string): Promise<Array<LimitOverride & {customerId: string | null}>> {
    const query = this.db('rate_limit_overrides')
      .leftJoin('api_keys', (join) => join.on('api_keys.id', '=', 'rate_limit_overrides.scope_id').andOnVal('rate_limit_overrides.scope_type', '=', 'key'))
      .select('rate_limit_overrides.*', 'api_keys.customer_id as key_customer_id')
      .orderBy([{column: 'rate_limit_overrides.scope_type'}, {column: 'rate_limit_overrides.scope_id'}])
    if (customerId !== undefined) {
      query.where((q) =>
        q.where({'rate_limit_overrides.scope_type': 'customer', 'rate_limit_overrides.scope_id': customerId}).orWhere('api_keys.customer_id', customerId),
      )
    }
    const rows = (await query) as Array<Row & {key_customer_id: string | null}>
    return rows.map((row) => ({...fromRow(row), customerId: row.scope_type === 'customer' ? row.scope_id : row.key_customer_id}))
  }

  async upsert(override: LimitOverride): Promise<void> {
    await this.db('rate_limit_overrides')
      .insert({
        scope_type: override.scope.type,
        scope_id: override.scope.id,
        per_minute: override.perMinute,
        per_hour: override.perHour,
        bulk_per_minute: override.bulkPerMinute,
        updated_at: override.updatedAt,
      })
      .onConflict(['scope_type', 'scope_id'])
      .merge()
  }

  async delete(scope: OverrideScope): Promise<boolean> {
    return (await this.db('rate_limit_overrides').where({scope_type: scope.type, scope_id: scope.id}).delete()) > 0
  }
}

function fromRow(row: Row): LimitOverride {
  return {
    scope: {type: row.scope_type as 'customer' | 'key', id: row.scope_id},
    perMinute: row.per_minute === null ? null : Number(row.per_minute),
    perHour: row.per_hour === null ? null : Number(row.per_hour),
    bulkPerMinute: row.bulk_per_minute === null ? null : Number(row.bulk_per_minute),
    updatedAt: Number(row.updated_at),
  }
}
