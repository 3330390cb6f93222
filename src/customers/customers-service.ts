import {randomUUID} from 'node:crypto'

import {type Clock, systemClock} from '../shared/clock.js'
import {ConflictError, NotFoundError, ValidationError} from '../shared/errors.js'
import {requireName, requireSlug, requireUuid} from '../shared/validate.js'
import {type Customer, type CustomFieldDefinition, DEFAULT_STAGES, FIELD_TYPES, type FieldType, LEAD_LINE_SLUG, type Stage} from './customer-types.js'
import type {CustomersStore} from './customers-store.js'

const COLOR_PATTERN = /^#[0-9a-f]{6}$/i

interface CreateCustomerInput {
  name: string
  id?: string
}

interface AddStageInput {
  slug: string
  name?: string
  color?: string
}

interface AddFieldInput {
  slug: string
  name?: string
  type: string
}

/** Customers, their pipeline stages and custom-field definitions: the operator-managed setup. */
export class CustomersService {
  constructor(
    private readonly store: CustomersStore,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Creates a customer with the default pipeline and the reserved `lead_line` field. */
  async create(input: CreateCustomerInput): Promise<Customer> {
    const name = requireName(input.name, 'name')
    const id = input.id === undefined ? randomUUID() : requireUuid(input.id, 'id')
    if (await this.store.findCustomer(id)) throw new ConflictError(`customer ${id} already exists`, 'leave --id out to get a new id')

    const now = this.clock.now()
    const customer: Customer = {id, name, createdAt: now}
    const stages = DEFAULT_STAGES.map((stage, position) => ({...stage, id: randomUUID(), customerId: id, position}))
    const leadLine = {id: randomUUID(), customerId: id, slug: LEAD_LINE_SLUG, name: 'Lead line', type: 'string' as const}
    await this.store.insertCustomer(customer, stages, [leadLine], now)
    return customer
  }

  async list(): Promise<Customer[]> {
    return this.store.listCustomers()
  }

  /** Loads a customer or throws NotFoundError with a hint to list them. */
  async get(customerId: string): Promise<Customer> {
    const customer = await this.store.findCustomer(requireUuid(customerId, 'customer'))
    if (!customer) throw new NotFoundError(`customer ${customerId} does not exist`, 'run `leads customers list`')
    return customer
  }

  async listStages(customerId: string): Promise<Stage[]> {
    await this.get(customerId)
    return this.store.listStages(customerId)
  }

  /** Appends a stage at the end of the customer's pipeline. */
  async addStage(customerId: string, input: AddStageInput): Promise<Stage> {
    const stages = await this.listStages(customerId)
    const slug = requireSlug(input.slug, 'slug')
    if (stages.some((stage) => stage.slug === slug))
      throw new ConflictError(`stage "${slug}" already exists`, "choose another slug; leads stages list shows the customer's stages")
    const color = input.color ?? '#64748b'
    if (!COLOR_PATTERN.test(color)) throw new ValidationError('color must be #rrggbb', 'color')
    const stage: Stage = {
      id: randomUUID(),
      customerId,
      slug,
      name: nameOrSlug(input.name, slug),
      color: color.toLowerCase(),
      position: stages.length === 0 ? 0 : Math.max(...stages.map((s) => s.position)) + 1,
    }
    await this.store.insertStage(stage, this.clock.now())
    return stage
  }

  async listFields(customerId: string): Promise<CustomFieldDefinition[]> {
    await this.get(customerId)
    return this.store.listFields(customerId)
  }

  async addField(customerId: string, input: AddFieldInput): Promise<CustomFieldDefinition> {
    const fields = await this.listFields(customerId)
    const slug = requireSlug(input.slug, 'slug')
    if (fields.some((field) => field.slug === slug))
      throw new ConflictError(`field "${slug}" already exists`, "choose another slug; leads fields list shows the customer's fields")
    if (!(FIELD_TYPES as readonly string[]).includes(input.type)) {
      throw new ValidationError(`type must be one of ${FIELD_TYPES.join(', ')}`, 'type')
    }
    const field = {id: randomUUID(), customerId, slug, name: nameOrSlug(input.name, slug), type: input.type as FieldType}
    await this.store.insertField(field, this.clock.now())
    return {...field, reserved: false}
  }

  /** Removes a definition; values already stored on leads are kept (they become unknown slugs). */
  async removeField(customerId: string, slug: string): Promise<void> {
    await this.get(customerId)
    if (slug === LEAD_LINE_SLUG) throw new ValidationError('lead_line is reserved and cannot be removed', 'slug')
    const removed = await this.store.deleteField(customerId, slug)
    if (!removed) throw new NotFoundError(`field "${slug}" does not exist`, 'run `leads fields list --customer ...`')
  }
}

/** No name gives the slug; a name given empty or blank is a mistake (an unset shell variable), refused as customers create and keys issue refuse it. */
function nameOrSlug(name: string | undefined, slug: string): string {
  if (name !== undefined && name.trim() === '') throw new ValidationError('name must not be empty', 'name', 'leave --name out to use the slug')
  return requireName(name, 'name', slug)
}
