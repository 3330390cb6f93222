import type {Knex} from 'knex'

import type {Db} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {compile, type Read, runRead, type Statement} from '../db/statements.js'
import {type Customer, type CustomFieldDefinition, type FieldType, LEAD_LINE_SLUG, type Owner, type Stage} from './customer-types.js'

interface CustomerRow {
  id: string
  name: string
  created_at: number | string
}

interface StageRow {
  id: string
  customer_id: string
  slug: string
  name: string
  color: string
  position: number
}

interface FieldRow {
  id: string
  customer_id: string
  slug: string
  name: string
  type: string
}

/** SQL for customers, their pipeline stages, their custom-field definitions and the owners leads are assigned to. */
export class CustomersStore {
  constructor(private readonly db: Db) {}

  async insertCustomer(customer: Customer, stages: Stage[], fields: Array<Omit<CustomFieldDefinition, 'reserved'>>, createdAt: number): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      await trx('customers').insert({id: customer.id, name: customer.name, created_at: customer.createdAt})
      await trx('stages').insert(stages.map((stage) => ({...stageToRow(stage), created_at: createdAt})))
      await trx('custom_fields').insert(fields.map((field) => ({...fieldToRow(field), created_at: createdAt})))
    })
  }

  async findCustomer(id: string): Promise<Customer | null> {
    const row = (await this.db('customers').where({id}).first()) as CustomerRow | undefined
    return row ? rowToCustomer(row) : null
  }

  /** Every customer's id: what a rebuild of derived data walks when not given one. */
  async customerIds(): Promise<string[]> {
    return (await this.db('customers').pluck('id')) as string[]
  }

  async listCustomers(): Promise<Customer[]> {
    const rows = (await this.db('customers').orderBy([{column: 'created_at'}, {column: 'id'}])) as CustomerRow[]
    return rows.map(rowToCustomer)
  }

  async listStages(customerId: string): Promise<Stage[]> {
    return runRead(this.db, this.stagesRead(customerId))
  }

  /** The customer's stages in pipeline order, as a read a write transaction sends in its batch. */
  stagesRead(customerId: string): Read<Stage[]> {
    return {
      statement: compile(
        this.db('stages')
          .where({customer_id: customerId})
          .orderBy([{column: 'position'}, {column: 'id'}]),
      ),
      read: (result) => (result.rows as unknown as StageRow[]).map(rowToStage),
    }
  }

  /** The customer's stages with these ids, with what a lead shows of each; null when there are none to read. */
  stageSummariesRead(customerId: string, ids: readonly string[]): Read<Array<Pick<Stage, 'id' | 'slug' | 'name' | 'color'>>> | null {
    if (ids.length === 0) return null
    return {
      statement: compile(
        this.db('stages')
          .where('customer_id', customerId)
          .whereIn('id', [...new Set(ids)])
          .select('id', 'slug', 'name', 'color'),
      ),
      read: (result) => result.rows as unknown as Array<Pick<Stage, 'id' | 'slug' | 'name' | 'color'>>,
    }
  }

  /**
   * The customer's owners with these ids, by id: a read for a list page, or to send in a write's
   * transaction (the owners of the leads it may merge into). Null when there are none to read.
   */
  ownersRead(customerId: string, ids: readonly string[]): Read<Map<string, Owner>> | null {
    if (ids.length === 0) return null
    const query = this.db('owners')
      .where('customer_id', customerId)
      .whereIn('id', [...new Set(ids)])
      .select('id', 'name', 'role_name')
    return {
      statement: compile(query),
      read: (result) =>
        new Map(result.rows.map((row) => [String(row['id']), {id: String(row['id']), name: String(row['name']), role_name: String(row['role_name'])}])),
    }
  }

  async insertStage(stage: Stage, createdAt: number): Promise<void> {
    await this.changeSetup(stage.customerId, (trx) => trx('stages').insert({...stageToRow(stage), created_at: createdAt}))
  }

  async listFields(customerId: string): Promise<CustomFieldDefinition[]> {
    return runRead(this.db, this.fieldsRead(customerId))
  }

  /** The customer's custom-field definitions, as a read a write transaction sends in its batch. */
  fieldsRead(customerId: string): Read<CustomFieldDefinition[]> {
    return {
      statement: compile(this.db('custom_fields').where({customer_id: customerId}).orderBy('slug')),
      read: (result) => (result.rows as unknown as FieldRow[]).map(rowToField),
    }
  }

  async insertField(field: Omit<CustomFieldDefinition, 'reserved'>, createdAt: number): Promise<void> {
    await this.changeSetup(field.customerId, (trx) => trx('custom_fields').insert({...fieldToRow(field), created_at: createdAt}))
  }

  /** Returns true when a definition was removed. */
  async deleteField(customerId: string, slug: string): Promise<boolean> {
    const removed = await this.changeSetup(customerId, (trx) => trx('custom_fields').where({customer_id: customerId, slug}).delete())
    return removed > 0
  }

  /** The customer's setup version (see the migration that adds it), as a read a write transaction sends in its batch. */
  setupVersionRead(customerId: string): Read<number | null> {
    return {
      statement: compile(this.db('customers').where({id: customerId}).select('setup_version')),
      read: (result) => (result.rows[0] === undefined ? null : Number((result.rows[0] as {setup_version: number | string}).setup_version)),
    }
  }

  /** A probe (see guardStatement) that finds a row when the customer's setup version is no longer `version`. */
  setupChangedProbe(customerId: string, version: number): Statement {
    return {sql: 'SELECT 1 FROM `customers` WHERE `id` = ? AND `setup_version` <> ?', bindings: [customerId, version]}
  }

  /**
   * Bumps the customer's setup version in `trx`, the transaction that changes its stages, fields
   * or webhooks, so no write keeps using what it kept of them (SetupCache, CreateGuess). On MySQL
   * it holds the customer's row until the transaction ends.
   */
  async bumpSetupVersion(trx: Knex.Transaction, customerId: string): Promise<void> {
    await trx('customers').where({id: customerId}).increment('setup_version', 1)
  }

  /** Changes the customer's stages or fields and bumps its setup version in one transaction. */
  private async changeSetup<T>(customerId: string, change: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return inTransaction(this.db, async (trx) => {
      const result = await change(trx)
      await this.bumpSetupVersion(trx, customerId)
      return result
    })
  }
}

function rowToCustomer(row: CustomerRow): Customer {
  return {id: row.id, name: row.name, createdAt: Number(row.created_at)}
}

function rowToStage(row: StageRow): Stage {
  return {
    id: row.id,
    customerId: row.customer_id,
    slug: row.slug,
    name: row.name,
    color: row.color,
    position: Number(row.position),
  }
}

function stageToRow(stage: Stage): StageRow {
  return {
    id: stage.id,
    customer_id: stage.customerId,
    slug: stage.slug,
    name: stage.name,
    color: stage.color,
    position: stage.position,
  }
}

function rowToField(row: FieldRow): CustomFieldDefinition {
  return {
    id: row.id,
    customerId: row.customer_id,
    slug: row.slug,
    name: row.name,
    type: row.type as FieldType,
    reserved: row.slug === LEAD_LINE_SLUG,
  }
}

function fieldToRow(field: Omit<CustomFieldDefinition, 'reserved'>): FieldRow {
  return {id: field.id, customer_id: field.customerId, slug: field.slug, name: field.name, type: field.type}
}
