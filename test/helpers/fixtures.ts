import {randomUUID} from 'node:crypto'

import type {Customer, Stage} from '../../src/customers/customer-types.js'
import type {Db} from '../../src/db/knex.js'
import type {ApiKey} from '../../src/keys/key-types.js'
import {SCOPES, type Scope} from '../../src/keys/scopes.js'
import type {LeadRecord} from '../../src/leads/lead-types.js'
import {createLogger} from '../../src/log/logger.js'
import {createServices, type ServiceOptions, type Services} from '../../src/services.js'
import {createStores} from '../../src/stores.js'
import type {Backend} from './backends.js'

/** Services on a backend that the root hook already migrated. */
export function openServices(backend: Backend, options: ServiceOptions = {}): Promise<Services> {
  return createServices(backend.config(), {logger: createLogger('silent'), autoMigrate: false, ...options})
}

export interface TestTenant {
  customer: Customer
  stages: Stage[]
  key: ApiKey
  token: string
}

/**
 * A fresh customer (its own rows, so tests never see each other's) with a key of the given scopes.
 * `roomy` raises the customer's rate limits for suites that make hundreds of requests.
 */
export async function newTenant(services: Services, scopes: Scope[] = [...SCOPES], options: {roomy?: boolean} = {}): Promise<TestTenant> {
  const customer = await services.customers.create({name: `test ${randomUUID().slice(0, 8)}`})
  if (options.roomy) await services.rateLimits.set({type: 'customer', id: customer.id}, {perMinute: 100_000, perHour: 100_000, bulkPerMinute: 1000})
  const stages = await services.customers.listStages(customer.id)
  const {key, token} = await services.keys.issue({customerId: customer.id, scopes})
  return {customer, stages, key, token}
}

/** Builds a stored lead for the tenant; `overrides` set any field. */
export function leadRecord(tenant: {customer: {id: string}; stages: readonly Pick<Stage, 'id'>[]}, overrides: Partial<LeadRecord> = {}): LeadRecord {
  const now = Date.now()
  return {
    id: randomUUID(),
    customerId: tenant.customer.id,
    sourcePlatform: 'direct',
    sourceType: 'manual',
    status: 'active',
    createdAt: now,
    updatedAt: now,
    contactName: 'Test Lead',
    contactPhone: null,
    contactEmail: null,
    score: null,
    qualified: null,
    stageId: tenant.stages[0]!.id,
    ownerId: null,
    lastInteractionAt: null,
    interactionCount: 0,
    leadLine: null,
    customFields: {},
    ...overrides,
  }
}

/** Seeds leads straight into the store; like any write, they wait in the change feed's pending set until a reader sequences them. */
export async function insertLeads(db: Db, leads: LeadRecord[]): Promise<void> {
  await (await createStores(db)).leadWrites.insertMany(leads)
}

/** Awaits a promise that must reject with the given error class; returns the error. */
export async function rejectsWith<E extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => E): Promise<E> {
  try {
    await promise
  } catch (error) {
    if (!(error instanceof type)) throw error
    return error
  }
  throw new Error(`expected a ${type.name}`)
}
