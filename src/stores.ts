import {CustomersStore} from './customers/customers-store.js'
import type {Db} from './db/knex.js'
import {DeliveriesStore} from './deliveries/deliveries-store.js'
import {InFlightSlotsStore} from './deliveries/in-flight-slots-store.js'
import {EventsStore} from './events/events-store.js'
import {IdempotencyStore} from './idempotency/idempotency-store.js'
import {KeysStore} from './keys/keys-store.js'
import {LeadChangeFeed} from './leads/lead-change-feed.js'
import {LeadCountsStore} from './leads/lead-counts-store.js'
import {LeadMatchStore} from './leads/lead-match-store.js'
import {LeadQueryStore} from './leads/lead-query-store.js'
import {LeadSearchIndex} from './leads/lead-search-store.js'
import {LeadWriteStatements} from './leads/lead-write-statements.js'
import {RateLimitStore} from './ratelimit/ratelimit-store.js'
import {WebhooksStore} from './webhooks/webhooks-store.js'

/** Every store on one database handle, each built once. */
export interface Stores {
  readonly customers: CustomersStore
  /** The list queries and their counts. */
  readonly leadQueries: LeadQueryStore
  readonly leadChangeFeed: LeadChangeFeed
  /** The reads and locks a write finds its matches with. */
  readonly leadMatches: LeadMatchStore
  /** The statements that write leads with their counts and search words. */
  readonly leadWrites: LeadWriteStatements
  /** The kept lead counts behind `total`. */
  readonly leadCounts: LeadCountsStore
  /** The words of names and emails that search looks up. */
  readonly searchIndex: LeadSearchIndex
  readonly events: EventsStore
  readonly webhooks: WebhooksStore
  readonly deliveries: DeliveriesStore
  /** The in-flight record where Redis is not configured or away. */
  readonly inFlight: InFlightSlotsStore
  readonly idempotency: IdempotencyStore
  readonly keys: KeysStore
  readonly rateLimits: RateLimitStore
}

/**
 * The one place stores are built: createServices wires services from them, and `leads status`
 * reads through them without starting any service.
 */
export function createStores(db: Db, options: {statementTimeoutMs?: number} = {}): Stores {
  const customers = new CustomersStore(db)
  const leadCounts = new LeadCountsStore(db, customers)
  const searchIndex = new LeadSearchIndex(db, customers)
  const leadQueries = new LeadQueryStore(db, leadCounts, customers, {statementTimeoutMs: options.statementTimeoutMs})
  return {
    customers,
    leadQueries,
    leadChangeFeed: new LeadChangeFeed(db, leadQueries),
    leadMatches: new LeadMatchStore(db),
    leadWrites: new LeadWriteStatements(db, leadCounts, searchIndex),
    leadCounts,
    searchIndex,
    events: new EventsStore(db),
    webhooks: new WebhooksStore(db),
    deliveries: new DeliveriesStore(db),
    inFlight: new InFlightSlotsStore(db),
    idempotency: new IdempotencyStore(db),
    keys: new KeysStore(db),
    rateLimits: new RateLimitStore(db),
  }
}
