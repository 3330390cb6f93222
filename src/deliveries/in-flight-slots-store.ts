import {type Db, isMysql} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {grantSlots, type InFlightSlots, type WebhookRef} from './in-flight-slots.js'

/**
 * SQL for the in-flight record in the database (table webhook_in_flight), where no Redis is
 * configured or while it is away. An exchange is one transaction that first locks the webhook's
 * row on MySQL (SQLite runs one write transaction at a time), so two workers never both see room
 * for one.
 */
export class InFlightSlotsStore implements InFlightSlots {
  constructor(private readonly db: Db) {}

  async exchange(webhook: WebhookRef, cap: number, done: readonly string[], wanted: readonly string[], heldUntil: number, now: number): Promise<string[]> {
    if (done.length === 0 && wanted.length === 0) return []
    const scope = {customer_id: webhook.customerId, webhook_id: webhook.id}
    return inTransaction(this.db, async (trx) => {
      if (isMysql(this.db)) await trx('webhooks').where({customer_id: webhook.customerId, id: webhook.id}).forUpdate().first('id')
      await trx('webhook_in_flight')
        .where(scope)
        .andWhere((q) => q.where('held_until', '<=', now).orWhereIn('delivery_id', [...done]))
        .delete()
      if (wanted.length === 0) return []
      const held = new Set(((await trx('webhook_in_flight').where(scope).select('delivery_id')) as Array<{delivery_id: string}>).map((row) => row.delivery_id))
      const {renewed, fresh} = grantSlots(held, wanted, cap)
      if (renewed.length > 0) await trx('webhook_in_flight').where(scope).whereIn('delivery_id', renewed).update({held_until: heldUntil})
      if (fresh.length > 0) await trx('webhook_in_flight').insert(fresh.map((id) => ({delivery_id: id, ...scope, held_until: heldUntil})))
      return [...renewed, ...fresh]
    })
  }

  async onTheWire(webhooks: readonly WebhookRef[], now: number): Promise<Map<string, string[]>> {
    const found = new Map<string, string[]>(webhooks.map((webhook) => [webhook.id, []]))
    for (const webhook of webhooks) {
      const rows = (await this.db('webhook_in_flight')
        .where({customer_id: webhook.customerId, webhook_id: webhook.id})
        .andWhere('held_until', '>', now)
        .select('delivery_id')) as Array<{delivery_id: string}>
      found.set(
        webhook.id,
        rows.map((row) => row.delivery_id),
      )
    }
    return found
  }
}
