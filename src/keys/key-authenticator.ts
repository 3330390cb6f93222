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
  /** How long the token hashes of internal keys are reused; bounds how late a new internal key is recognised (see isInternalToken). */
  internalTokensTtlMs?: number
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
  private internalTokens: {hashes: ReadonlySet<string>; loadedAt: number} = {hashes: new Set(), loadedAt: -Infinity}
  private internalTokensLoading: Promise<void> | null = null
  private readonly internalTokensTtlMs: number
  private readonly cacheTtlMs: number
  private readonly maxCachedTokens: number
  private readonly clock: Clock

  constructor(
    private readonly store: KeysStore,
    options: KeyAuthenticatorOptions = {},
  ) {
    this.cacheTtlMs = options.cacheTtlMs ?? 2000
    this.maxCachedTokens = options.maxCachedTokens ?? 10_000
    this.internalTokensTtlMs = options.internalTokensTtlMs ?? 5000
    this.clock = options.clock ?? systemClock
  }

  /** The active key the token belongs to, or null when it is malformed, unknown, retired, revoked or expired. */
  async authenticate(token: string): Promise<ApiKey | null> {
    if (!isWellFormedToken(token)) return null
    const now = this.clock.now()
    return this.activeKey(await this.lookup(hashToken(token), now), now)
  }

  /**
   * What authenticate would answer without a lookup: the key, or null, when the token's last
   * lookup is still cached (or it is malformed); undefined when only a lookup can tell.
   */
  cachedKey(token: string): ApiKey | null | undefined {
    if (!isWellFormedToken(token)) return null
    const now = this.clock.now()
    const hash = hashToken(token)
    const cached = this.hits.get(hash) ?? this.misses.get(hash)
    if (!cached || now - cached.loadedAt >= this.cacheTtlMs) return undefined
    return this.activeKey(cached.grant, now)
  }

  /**
   * Whether the token is one of an internal key's, told apart from any other token without a
   * lookup of it: the hashes of every internal key's tokens are read at most once per
   * internalTokensTtlMs (internal keys are few). An address over its keyless budget is refused
   * without a token lookup, except for these tokens, so its guesses still cost no query.
   * A true answer only says the token may be valid: authenticate decides.
   */
  async isInternalToken(token: string): Promise<boolean> {
    if (!isWellFormedToken(token)) return false
    if (this.clock.now() - this.internalTokens.loadedAt >= this.internalTokensTtlMs) {
      this.internalTokensLoading ??= this.store
        .internalTokenHashes()
        .then((hashes) => {
          this.internalTokens = {hashes: new Set(hashes), loadedAt: this.clock.now()}
        })
        // The last hashes known are kept until the next try: a database that fails here fails the lookups anyway.
        .catch(() => void (this.internalTokens = {...this.internalTokens, loadedAt: this.clock.now()}))
        .finally(() => (this.internalTokensLoading = null))
      await this.internalTokensLoading
    }
    return this.internalTokens.hashes.has(hashToken(token))
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

  private activeKey(grant: TokenGrant | null, now: number): ApiKey | null {
    if (!grant) return null
    if (grant.tokenRetiresAt !== null && grant.tokenRetiresAt <= now) return null
    if (keyState(grant.key, now) !== 'active') return null
    this.lastUsed.set(grant.key.id, now)
    return grant.key
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
