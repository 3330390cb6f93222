import {type Clock, systemClock} from '../shared/clock.js'
import {type ApiKey, keyState, type TokenGrant} from './key-types.js'
import type {KeysStore} from './keys-store.js'
import {hashToken, isWellFormedToken} from './tokens.js'

interface KeyAuthenticatorOptions {
  /**
   * How long a lookup (hit or miss) is reused. Bounds how late a revocation or rotation made
   * by another process is seen: the contract allows 5 s, so this stays well under it.
   */
  cacheTtlMs?: number
  maxCachedTokens?: number
  clock?: Clock
}

interface CachedGrant {
  grant: TokenGrant | null
  loadedAt: number
}

/**
 * Resolves a bearer token to its key on the request path. Lookups are cached briefly so a busy
 * key costs no query per request, and uses are remembered in memory and written in batches
 * (flushLastUsed) rather than with a write per request.
 */
export class KeyAuthenticator {
  // Hits and misses are kept apart: a flood of guessed tokens (misses) must not evict real keys.
  private readonly hits = new Map<string, CachedGrant>()
  private readonly misses = new Map<string, CachedGrant>()
  private readonly lastUsed = new Map<string, number>()
  private readonly cacheTtlMs: number
  private readonly maxCachedTokens: number
  private readonly clock: Clock

  constructor(
    private readonly store: KeysStore,
    options: KeyAuthenticatorOptions = {},
  ) {
    this.cacheTtlMs = options.cacheTtlMs ?? 2000
    this.maxCachedTokens = options.maxCachedTokens ?? 10_000
    this.clock = options.clock ?? systemClock
  }

  /** The active key the token belongs to, or null when it is malformed, unknown, retired, revoked or expired. */
  async authenticate(token: string): Promise<ApiKey | null> {
    if (!isWellFormedToken(token)) return null
    const hash = hashToken(token)
    const now = this.clock.now()
    const grant = await this.lookup(hash, now)
    if (!grant) return null
    if (grant.tokenRetiresAt !== null && grant.tokenRetiresAt <= now) return null
    if (keyState(grant.key, now) !== 'active') return null
    this.lastUsed.set(grant.key.id, now)
    return grant.key
  }

  /** Writes the remembered use times; the daemon calls it on a timer and at shutdown. */
  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return
    const batch = new Map(this.lastUsed)
    this.lastUsed.clear()
    try {
      await this.store.recordLastUsed(batch)
    } catch (error) {
      // Put the batch back (newer uses recorded meanwhile win) so the next flush writes it.
      for (const [keyId, at] of batch) if ((this.lastUsed.get(keyId) ?? 0) < at) this.lastUsed.set(keyId, at)
      throw error
    }
  }

  private async lookup(hash: string, now: number): Promise<TokenGrant | null> {
    const cached = this.hits.get(hash) ?? this.misses.get(hash)
    if (cached && now - cached.loadedAt < this.cacheTtlMs) return cached.grant
    const grant = await this.store.findByTokenHash(hash)
    this.hits.delete(hash)
    this.misses.delete(hash)
    this.remember(grant ? this.hits : this.misses, hash, {grant, loadedAt: now})
    return grant
  }

  private remember(cache: Map<string, CachedGrant>, hash: string, entry: CachedGrant): void {
    if (cache.size >= this.maxCachedTokens) {
      // Maps iterate in insertion order, so the first entry is the oldest lookup.
      const oldest = cache.keys().next().value
      if (oldest !== undefined) cache.delete(oldest)
    }
    cache.set(hash, entry)
  }
}
