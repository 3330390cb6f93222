import {randomBytes} from 'node:crypto'

import type {DeliveriesStore} from '../deliveries/deliveries-store.js'
import type {IdempotencyStore} from '../idempotency/idempotency-store.js'
import {NO_HOOKS, storedResponse, type WriteHooks} from '../leads/write-types.js'
import {bodyAjv, compileOnFirstUse, toValidationError, type Validator} from '../shared/ajv.js'
import {type Clock, isoTime, systemClock} from '../shared/clock.js'
import {ConflictError, NotFoundError, ValidationError} from '../shared/errors.js'
import type {SecretBox} from './secret-box.js'
import {mintWebhookSecret} from './secret-box.js'
import {SECRET_OVERLAP_MS} from './signing-secrets.js'
import {checkWebhookUrl, type TargetPolicy} from './ssrf.js'
import {CREATE_WEBHOOK_SCHEMA, UPDATE_WEBHOOK_SCHEMA, WEBHOOK_RULES} from './webhook-schemas.js'
import {type ApiWebhook, DEFAULT_MAX_IN_FLIGHT, type EventType, MAX_IN_FLIGHT_LIMIT, MAX_WEBHOOKS_PER_CUSTOMER, type Webhook} from './webhook-types.js'
import type {WebhookChanges, WebhooksStore} from './webhooks-store.js'

const validateCreate = compileOnFirstUse(bodyAjv, CREATE_WEBHOOK_SCHEMA)
const validateUpdate = compileOnFirstUse(bodyAjv, UPDATE_WEBHOOK_SCHEMA)

/**
 * What enabling a disabled webhook does to its health: the five days of failures that disable a
 * webhook count from when it was enabled again, or its first failed delivery after a fix would
 * disable it again at once, as if every delivery had failed for five more days.
 */
const RESTARTED_STREAK = {consecutiveFailures: 0, failingSince: null} as const

/** A webhook and, at creation or rotation only, its signing secret. */
export interface WebhookWithSecret {
  webhook: Webhook
  secret?: string
  /**
   * After a rotation: until when requests also carry X-Service-Signature-Previous, made with the
   * replaced secret; null when the replaced secret was sealed under a master key the database no
   * longer uses (after `leads maintenance adopt-master-key`), so it signs nothing.
   */
  previousSecretUntil?: number | null
}

/** Registering and managing a customer's webhooks; secrets are sealed before they are stored. */
export class WebhooksService {
  constructor(
    private readonly store: WebhooksStore,
    private readonly deliveries: Pick<DeliveriesStore, 'cancelForWebhookStatement'>,
    private readonly keys: Pick<IdempotencyStore, 'claimAnsweredStatements' | 'claimStatements' | 'completeStatements'>,
    private readonly secrets: SecretBox,
    private readonly targets: TargetPolicy,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Registers a webhook. Under an Idempotency-Key (`hooks`) the key and the answer are stored in
   * the insert's transaction, so a retried registration replays the first one instead of adding a
   * second webhook that would get every event again under other delivery ids.
   */
  async create(customerId: string, body: unknown, hooks: WriteHooks<WebhookWithSecret> = NO_HOOKS): Promise<WebhookWithSecret> {
    const input = validated(validateCreate, body)
    const url = (await checkWebhookUrl(input['url'] as string, this.targets)).href
    const now = this.clock.now()
    const webhook: Webhook = {
      id: `wh_${randomBytes(12).toString('hex')}`,
      customerId,
      url,
      eventTypes: input['event_types'] as EventType[],
      isActive: true,
      // The schema's defaults (WEBHOOK_DEFAULTS) are filled in by validation.
      timeoutSeconds: input['timeout_seconds'] as number,
      retryAttempts: input['retry_attempts'] as number,
      description: input['description'] as string | null,
      disabledReason: null,
      disabledBy: null,
      consecutiveFailures: 0,
      failingSince: null,
      lastSuccessAt: null,
      lastFailureAt: null,
      maxInFlight: null,
      breaker: {state: 'closed', until: null, openedAt: null},
      createdAt: now,
      updatedAt: now,
    }
    const created = {webhook, secret: mintWebhookSecret()}
    const answered = hooks.key ? this.keys.claimAnsweredStatements([storedResponse(hooks.key, created)]) : []
    if (!(await this.store.insertWithinLimit(webhook, this.secrets.seal(created.secret), MAX_WEBHOOKS_PER_CUSTOMER, answered))) {
      throw new ValidationError(`a customer can have at most ${MAX_WEBHOOKS_PER_CUSTOMER} webhooks; delete one first`, 'url')
    }
    return created
  }

  /** An answer kept under an Idempotency-Key, sealed: a registration's holds the signing secret. */
  sealAnswer(body: string): string {
    return this.secrets.seal(body)
  }

  /** The answer sealAnswer kept, as it was sent. */
  openAnswer(sealed: string): string {
    return this.secrets.open(sealed)
  }

  /** A customer's webhooks; all of them when no customer is given (operators). */
  async list(customerId?: string): Promise<Webhook[]> {
    return this.store.list(customerId)
  }

  /**
   * Changes a webhook. Under an Idempotency-Key (`hooks`) the key and the answer are stored in
   * the change's transaction, so a retried rotation replays the first new secret instead of
   * minting another one (which would also retire the first one as the previous secret).
   */
  async update(customerId: string, id: string, body: unknown, hooks: WriteHooks<WebhookWithSecret> = NO_HOOKS): Promise<WebhookWithSecret> {
    const current = await this.get(customerId, id)
    const input = validated(validateUpdate, body)
    const changes: WebhookChanges = {updatedAt: this.clock.now()}
    if (input['url'] !== undefined) changes.url = (await checkWebhookUrl(input['url'] as string, this.targets)).href
    if (input['event_types'] !== undefined) changes.eventTypes = input['event_types'] as EventType[]
    if (input['description'] !== undefined) changes.description = input['description'] as string | null
    if (input['timeout_seconds'] !== undefined) changes.timeoutSeconds = input['timeout_seconds'] as number
    if (input['retry_attempts'] !== undefined) changes.retryAttempts = input['retry_attempts'] as number
    if (input['is_active'] !== undefined) {
      changes.isActive = input['is_active'] as boolean
      if (changes.isActive && current.disabledBy === 'operator') {
        throw new ConflictError(
          `webhook ${id} was disabled by the service operator (${current.disabledReason ?? 'no reason given'}) and only the operator can enable it`,
          'contact the operator; other fields can still be changed',
        )
      }
      // Disabling an operator-disabled webhook again keeps the operator's hold.
      if (current.disabledBy !== 'operator') {
        changes.disabledReason = changes.isActive ? null : 'disabled through the API'
        changes.disabledBy = changes.isActive ? null : 'customer'
      }
      if (changes.isActive && !current.isActive) Object.assign(changes, RESTARTED_STREAK)
    }
    const secret = input['rotate_secret'] === true ? mintWebhookSecret() : undefined
    if (secret !== undefined) changes.newSecretCiphertext = this.secrets.seal(secret)
    const updated = (webhook: Webhook): WebhookWithSecret =>
      secret === undefined ? {webhook} : {webhook, secret, previousSecretUntil: changes.updatedAt + SECRET_OVERLAP_MS}
    const {key} = hooks
    if (!key) {
      await this.store.update(customerId, id, changes)
      return updated(await this.get(customerId, id))
    }
    let result: WebhookWithSecret | undefined
    const answer = (webhook: Webhook) => this.keys.completeStatements([storedResponse(key, (result = updated(webhook)))])
    if (!(await this.store.updateAnswered(customerId, id, changes, this.keys.claimStatements([key.claim]), answer)) || !result) throw webhookNotFound(id)
    return result
  }

  async delete(customerId: string, id: string): Promise<void> {
    if (!(await this.store.delete(customerId, id, this.deliveries.cancelForWebhookStatement(customerId, id, this.clock.now())))) throw webhookNotFound(id)
  }

  /** The customer's webhook, or 404 (also for another customer's id). */
  async get(customerId: string, id: string): Promise<Webhook> {
    const webhook = await this.store.find(customerId, id)
    if (!webhook) throw webhookNotFound(id)
    return webhook
  }

  /** Operator: a webhook by id alone. */
  async getById(id: string): Promise<Webhook> {
    const webhook = await this.store.findById(id)
    if (!webhook) throw new NotFoundError(`webhook ${id} does not exist`, 'run `leads webhooks list`')
    return webhook
  }

  /** Operator: deletes a webhook by id alone (its pending deliveries are cancelled). */
  async deleteById(id: string): Promise<Webhook> {
    const webhook = await this.getById(id)
    await this.delete(webhook.customerId, id)
    return webhook
  }

  /**
   * Operator: mints a new signing secret for a webhook by id alone. The old one stops signing
   * X-Service-Signature at once and signs X-Service-Signature-Previous for SECRET_OVERLAP_MS.
   */
  async rotateSecretById(id: string): Promise<WebhookWithSecret> {
    const sealed = await this.store.findWithSecret(id)
    if (!sealed) throw new NotFoundError(`webhook ${id} does not exist`, 'run `leads webhooks list`')
    const rotated = await this.update(sealed.webhook.customerId, id, {rotate_secret: true})
    // The runbook after a lost master key rotates every secret: the one retired was sealed under
    // the lost key, so no request carries it and there is no overlap to promise.
    return this.opens(sealed.secretCiphertext) ? rotated : {...rotated, previousSecretUntil: null}
  }

  private opens(sealed: string): boolean {
    try {
      this.secrets.open(sealed)
      return true
    } catch {
      return false
    }
  }

  /** Operator: turn a webhook on or off (changed false when it already was); turning a disabled one on starts its failure streak afresh. */
  async setActive(id: string, isActive: boolean): Promise<{webhook: Webhook; changed: boolean}> {
    const webhook = await this.getById(id)
    // Already so: nothing is written. A webhook disabled by its customer or by failures becomes
    // the operator's to enable (see update).
    const already = isActive ? webhook.isActive : !webhook.isActive && webhook.disabledBy === 'operator'
    if (already) return {webhook, changed: false}
    await this.store.update(webhook.customerId, id, {
      isActive,
      disabledReason: isActive ? null : 'disabled by an operator',
      disabledBy: isActive ? null : 'operator',
      ...(isActive && !webhook.isActive ? RESTARTED_STREAK : {}),
      updatedAt: this.clock.now(),
    })
    return {webhook: await this.getById(id), changed: true}
  }

  /**
   * Operator: caps how many of a webhook's deliveries are in flight at once (1 to
   * MAX_IN_FLIGHT_LIMIT); null goes back to the default, DEFAULT_MAX_IN_FLIGHT.
   */
  async setMaxInFlight(id: string, cap: number | null): Promise<Webhook> {
    if (cap !== null && (!Number.isInteger(cap) || cap < 1 || cap > MAX_IN_FLIGHT_LIMIT)) {
      throw new ValidationError(
        `max in flight must be a whole number from 1 to ${MAX_IN_FLIGHT_LIMIT}, got ${cap}`,
        'max_in_flight',
        `\`leads webhooks limit ${id} --reset\` goes back to the default of ${DEFAULT_MAX_IN_FLIGHT}`,
      )
    }
    const webhook = await this.getById(id)
    await this.store.update(webhook.customerId, id, {maxInFlight: cap, updatedAt: this.clock.now()})
    return this.getById(id)
  }
}

/** The API's view of a webhook. */
export function toApiWebhook(webhook: Webhook): ApiWebhook {
  return {
    id: webhook.id,
    url: webhook.url,
    event_types: webhook.eventTypes,
    is_active: webhook.isActive,
    timeout_seconds: webhook.timeoutSeconds,
    retry_attempts: webhook.retryAttempts,
    description: webhook.description,
    created_at: isoTime(webhook.createdAt),
    updated_at: isoTime(webhook.updatedAt),
  }
}

function validated(validate: Validator, body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('body must be a JSON object')
  const copy = trimmed(body as Record<string, unknown>)
  if (!validate(copy)) throw toValidationError(validate.errors?.[0], (param) => WEBHOOK_RULES[param], 'field')
  return copy
}

/**
 * The body with `url` and `description` trimmed, as a lead's strings are (contract: strings are
 * trimmed before validation): a URL pasted with a trailing newline is the same URL, and a blank
 * description is no description (null), as a blank contact field is "not given".
 */
function trimmed(body: Record<string, unknown>): Record<string, unknown> {
  const copy = {...body}
  if (typeof copy['url'] === 'string') copy['url'] = copy['url'].trim()
  if (typeof copy['description'] === 'string') copy['description'] = copy['description'].trim() || null
  return copy
}

export function webhookNotFound(id: string): NotFoundError {
  return new NotFoundError(`No webhook ${id}. List yours with GET /api/agents/crm/lead-webhooks.`)
}
