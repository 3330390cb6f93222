import type {CustomersService} from '../customers/customers-service.js'
import type {ApiKey} from '../keys/key-types.js'
import type {KeysService} from '../keys/keys-service.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {ValidationError} from '../shared/errors.js'
import {effectiveLimits, type LimitOverride, type Limits, type OverrideScope} from './limits.js'
import type {RateLimitStore} from './ratelimit-store.js'

interface OverrideChange {
  perMinute?: number
  perHour?: number
  bulkPerMinute?: number
}

export interface LimitsView {
  scope: OverrideScope
  override: LimitOverride | null
  /** For a key: the limits it gets after its customer's override and the defaults. */
  effective: Limits
  /** An internal key: no limit applies to it, whatever `effective` would be. */
  exempt: boolean
}

const MAX_LIMIT = 1_000_000

/** Operator overrides of the rate limits, and the limits in force for a key (cached briefly). */
export class RateLimitService {
  private readonly cache = new Map<string, {limits: Limits; loadedAt: number}>()

  constructor(
    private readonly store: RateLimitStore,
    private readonly customers: CustomersService,
    private readonly keys: KeysService,
    private readonly clock: Clock = systemClock,
    /** How long the daemon reuses a key's limits: an override reaches every daemon within this (bound: 10 s). */
    private readonly cacheTtlMs = 5000,
  ) {}

  /** Sets the given values of a customer's or key's override, keeping the others. */
  async set(scope: OverrideScope, change: OverrideChange): Promise<LimitsView> {
    const key = await this.checkScope(scope)
    // The daemon never counts an internal key's requests, so its override would be stored and shown but never applied.
    if (key?.internal) {
      throw new ValidationError(
        `key ${key.id} is internal: it is exempt from every rate limit, so an override would not apply`,
        'key',
        'to throttle it, issue the customer a key without --internal and revoke this one',
      )
    }
    const values = Object.entries(change).filter(([, value]) => value !== undefined)
    if (values.length === 0) throw new ValidationError('give at least one of --per-minute, --per-hour, --bulk-per-minute', 'limits')
    for (const [name, value] of values) {
      if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_LIMIT) {
        // Named as the operator typed it (perHour is --per-hour).
        const flag = `--${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`
        throw new ValidationError(
          `${flag} must be an integer from 1 to ${MAX_LIMIT}`,
          flag,
          'a key that must never be limited is issued with --internal instead',
        )
      }
    }
    const current = await this.store.find(scope)
    await this.store.upsert({
      scope,
      perMinute: change.perMinute ?? current?.perMinute ?? null,
      perHour: change.perHour ?? current?.perHour ?? null,
      bulkPerMinute: change.bulkPerMinute ?? current?.bulkPerMinute ?? null,
      updatedAt: this.clock.now(),
    })
    return this.show(scope)
  }

  async show(scope: OverrideScope): Promise<LimitsView> {
    const key = await this.checkScope(scope)
    if (key) {
      const {key: keyOverride, customer} = await this.store.findForKey(key.id, key.customerId)
      return {scope, override: keyOverride, effective: effectiveLimits(keyOverride, customer), exempt: key.internal}
    }
    const override = await this.store.find(scope)
    return {scope, override, effective: effectiveLimits(null, override), exempt: false}
  }

  /** The overrides in place, of every customer or of one (its own and its keys'). */
  async list(customerId?: string): Promise<Array<LimitOverride & {customerId: string | null}>> {
    if (customerId !== undefined) await this.customers.get(customerId)
    return this.store.list(customerId)
  }

  /** Removes the override; returns whether there was one. */
  async clear(scope: OverrideScope): Promise<boolean> {
    await this.checkScope(scope)
    return this.store.delete(scope)
  }

  /**
   * The limits in force for a key, as the daemon applies them. When the overrides cannot be read
   * again (the database unreachable), the limits last read stand: the request is still counted,
   * and its answer (the 503 it likely gets) still carries the key's RateLimit headers.
   */
  async limitsFor(key: ApiKey): Promise<Limits> {
    const now = this.clock.now()
    const cached = this.cache.get(key.id)
    if (cached && now - cached.loadedAt < this.cacheTtlMs) return cached.limits
    let overrides: Awaited<ReturnType<RateLimitStore['findForKey']>>
    try {
      overrides = await this.store.findForKey(key.id, key.customerId)
    } catch (error) {
      if (cached) return cached.limits
      throw error
    }
    const {key: keyOverride, customer} = overrides
    const limits = effectiveLimits(keyOverride, customer)
    this.cache.set(key.id, {limits, loadedAt: now})
    return limits
  }

  private async checkScope(scope: OverrideScope): Promise<ApiKey | null> {
    if (scope.type === 'key') return this.keys.get(scope.id)
    await this.customers.get(scope.id)
    return null
  }
}
