import type {Scope} from './scopes.js'

export type KeyState = 'active' | 'expired' | 'revoked'

export interface ApiKey {
  id: string
  customerId: string
  name: string | null
  scopes: Scope[]
  /** Internal keys are exempt from rate limits. */
  internal: boolean
  createdAt: number
  expiresAt: number | null
  revokedAt: number | null
  lastUsedAt: number | null
}

/** A key as listed: with when its previous tokens stop, while one still works after a rotation with a grace period. */
export interface ListedKey extends ApiKey {
  previousTokensRetireAt: number | null
}

/** A key as seen through one of its tokens, which may retire before the key does (rotation grace). */
export interface TokenGrant {
  key: ApiKey
  tokenRetiresAt: number | null
}

export function keyState(key: ApiKey, now: number): KeyState {
  if (key.revokedAt !== null && key.revokedAt <= now) return 'revoked'
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired'
  return 'active'
}
