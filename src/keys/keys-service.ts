import {randomUUID} from 'node:crypto'

import type {CustomersService} from '../customers/customers-service.js'
import {type Clock, systemClock} from '../shared/clock.js'
import {MAX_DURATION_MS} from '../shared/duration.js'
import {NotFoundError, ValidationError} from '../shared/errors.js'
import {requireName, requireUuid} from '../shared/validate.js'
import {type ApiKey, keyState, type ListedKey} from './key-types.js'
import type {KeysStore} from './keys-store.js'
import {isScope, SCOPES, type Scope} from './scopes.js'
import {hashToken, mintToken} from './tokens.js'

interface IssueKeyInput {
  customerId: string
  scopes: string[]
  name?: string
  expiresInMs?: number
  internal?: boolean
}

/** A key together with the token minted for it: shown once, never stored. */
interface IssuedKey {
  key: ApiKey
  token: string
}

/**
 * The longest --grace of a rotation: the replaced token keeps working all that time, so a grace
 * is for switching clients over, not for keeping a leaked token alive.
 */
export const MAX_ROTATION_GRACE_MS = 30 * 86_400_000
export const MAX_ROTATION_GRACE_TEXT = '30d'

interface RevokedKey {
  key: ApiKey
  /** True when the key was revoked before this call, which then changed nothing. */
  alreadyRevoked: boolean
}

interface RotatedKey extends IssuedKey {
  /** When the key's previous tokens stop working (now, unless a grace period was given). */
  previousTokensRetireAt: number
}

/** Issuing, listing, rotating and revoking customer keys (operator side). */
export class KeysService {
  constructor(
    private readonly store: KeysStore,
    private readonly customers: CustomersService,
    private readonly clock: Clock = systemClock,
  ) {}

  async issue(input: IssueKeyInput): Promise<IssuedKey> {
    const customer = await this.customers.get(input.customerId)
    const scopes = validateScopes(input.scopes)
    // Checked here too, not only by the CLI's parser: a key whose expiry cannot be shown as a date breaks every listing.
    if (input.expiresInMs !== undefined && !(Number.isSafeInteger(input.expiresInMs) && input.expiresInMs <= MAX_DURATION_MS)) {
      throw new ValidationError('expires-in must be a duration of at most 3650d (ten years)', 'expires-in')
    }
    if (input.expiresInMs !== undefined && input.expiresInMs <= 0) {
      throw new ValidationError(
        'expires-in must be longer than zero: the key would be expired when issued',
        'expires-in',
        'give a lifetime such as 90d, or leave --expires-in out for a key that never expires',
      )
    }
    const now = this.clock.now()
    const key: ApiKey = {
      id: randomUUID(),
      customerId: customer.id,
      name: keyName(input.name),
      scopes,
      internal: input.internal ?? false,
      createdAt: now,
      expiresAt: input.expiresInMs === undefined ? null : now + input.expiresInMs,
      revokedAt: null,
      lastUsedAt: null,
    }
    const token = mintToken()
    await this.store.insertKey(key, hashToken(token))
    return {key, token}
  }

  async list(customerId?: string): Promise<ListedKey[]> {
    if (customerId !== undefined) await this.customers.get(customerId)
    return this.store.listKeys(this.clock.now(), customerId)
  }

  async get(keyId: string): Promise<ApiKey> {
    const key = await this.store.findKey(requireUuid(keyId, 'key'))
    if (!key) throw new NotFoundError(`key ${keyId} does not exist`, 'run `leads keys list`')
    return key
  }

  /** Mints a new token for the key; the old ones stop at once, or after `graceMs`. */
  async rotate(keyId: string, graceMs = 0): Promise<RotatedKey> {
    if (!(Number.isSafeInteger(graceMs) && graceMs >= 0 && graceMs <= MAX_ROTATION_GRACE_MS)) {
      throw new ValidationError(`grace must be a duration of at most ${MAX_ROTATION_GRACE_TEXT}`, 'grace')
    }
    const key = await this.get(keyId)
    const now = this.clock.now()
    const state = keyState(key, now)
    if (state !== 'active') {
      throw new ValidationError(`key ${keyId} is ${state}; issue a new key instead`, 'key', 'run `leads keys issue ...`')
    }
    const token = mintToken()
    const previousTokensRetireAt = now + graceMs
    await this.store.rotateToken(key.id, hashToken(token), now, previousTokensRetireAt)
    return {key, token, previousTokensRetireAt}
  }

  /** Revokes the key; a key revoked before keeps its first revocation time (revoking is idempotent). */
  async revoke(keyId: string): Promise<RevokedKey> {
    const key = await this.get(keyId)
    const revoked = key.revokedAt === null ? await this.store.revokeKey(key.id, this.clock.now()) : false
    return {key: await this.get(key.id), alreadyRevoked: !revoked}
  }
}

/** No --name gives a key without one; a name given empty or blank is a mistake (an unset shell variable), not a wish for none. */
function keyName(name: string | undefined): string | null {
  if (name !== undefined && name.trim() === '') throw new ValidationError('name must not be empty', 'name', 'leave --name out for a key without a name')
  return requireName(name, 'name', null)
}

function validateScopes(requested: string[]): Scope[] {
  if (requested.length === 0) throw new ValidationError(`give at least one scope: ${SCOPES.join(', ')}`, 'scope')
  for (const scope of requested) {
    if (!isScope(scope)) throw new ValidationError(`unknown scope "${scope}"; valid: ${SCOPES.join(', ')}`, 'scope')
  }
  return [...new Set(requested as Scope[])]
}
