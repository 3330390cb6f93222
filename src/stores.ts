import type {CustomersStore} from './customers/customers-store.js'
import type {Db} from './db/knex.js'
import type {DeliveriesStore} from './deliveries/deliveries-store.js'
import type {InFlightSlotsStore} from './deliveries/in-flight-slots-store.js'
import type {EventsStore} from './events/events-store.js'
import type {IdempotencyStore} from './idempotency/idempotency-store.js'
import type {KeysStore} from './keys/keys-store.js'
import type {LeadChangeFeed} from './leads/lead-change-feed.js'
import type {LeadCountsStore} from './leads/lead-counts-store.js'
import type {LeadMatchStore} from './leads/lead-match-store.js'
import type {LeadQueryStore} from './leads/lead-query-store.js'
import type {LeadSearchIndex} from './leads/lead-search-index.js'
import type {LeadWriteStatements} from './leads/lead-write-statements.js'
import type {RateLimitStore} from './ratelimit/ratelimit-store.js'
import {allParts, type GetPart, lazyParts, type PartBuilders} from './shared/parts.js'
import type {MasterKeyCheck} from './webhooks/master-key-check.js'
import type {WebhooksStore} from './webhooks/webhooks-store.js'

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
  /** Which master key the webhook secrets are sealed with. */
  readonly masterKeyCheck: MasterKeyCheck
}

export interface StoreOptions {
  statementTimeoutMs?: number
}

/**
 * The one place stores are built, each with its module loaded when it is first asked for: an
 * operator command that reads keys loads the keys store alone (storeParts), while createStores
 * builds them all.
 */
function storeBuilders(db: Db, options: StoreOptions): PartBuilders<Stores> {
  return {
    customers: async () => new (await import('./customers/customers-store.js')).CustomersStore(db),
    leadQueries: async (get) =>
      new (await import('./leads/lead-query-store.js')).LeadQueryStore(db, await get('leadCounts'), await get('customers'), {
        statementTimeoutMs: options.statementTimeoutMs,
      }),
    leadChangeFeed: async (get) => new (await import('./leads/lead-change-feed.js')).LeadChangeFeed(db, await get('leadQueries')),
    leadMatches: async () => new (await import('./leads/lead-match-store.js')).LeadMatchStore(db),
    leadWrites: async (get) =>
      new (await import('./leads/lead-write-statements.js')).LeadWriteStatements(db, await get('leadCounts'), await get('searchIndex')),
    leadCounts: async (get) => new (await import('./leads/lead-counts-store.js')).LeadCountsStore(db, await get('customers')),
    searchIndex: async (get) => new (await import('./leads/lead-search-index.js')).LeadSearchIndex(db, await get('customers')),
    events: async () => new (await import('./events/events-store.js')).EventsStore(db),
    webhooks: async (get) => new (await import('./webhooks/webhooks-store.js')).WebhooksStore(db, await get('customers')),
    deliveries: async () => new (await import('./deliveries/deliveries-store.js')).DeliveriesStore(db),
    inFlight: async () => new (await import('./deliveries/in-flight-slots-store.js')).InFlightSlotsStore(db),
    idempotency: async () => new (await import('./idempotency/idempotency-store.js')).IdempotencyStore(db),
    keys: async () => new (await import('./keys/keys-store.js')).KeysStore(db),
    rateLimits: async () => new (await import('./ratelimit/ratelimit-store.js')).RateLimitStore(db),
    masterKeyCheck: async () => new (await import('./webhooks/master-key-check.js')).MasterKeyCheck(db),
  }
}

/** The stores on one handle, each built when first asked for. */
export function storeParts(db: Db, options: StoreOptions = {}): GetPart<Stores> {
  return lazyParts(storeBuilders(db, options))
}

/**
 * Every store on one handle, built through `get` when given (so a store it already built is the
 * same one): createServices wires services from them, tests and benchmarks read through them.
 */
export function createStores(db: Db, options: StoreOptions = {}, get: GetPart<Stores> = storeParts(db, options)): Promise<Stores> {
  return allParts(storeBuilders(db, options), get)
}
