import type {CustomerSetup} from './lead-input.js'
import type {MatchEntry} from './lead-matching.js'
import {KeptPerCustomer, type SetupCache} from './setup-cache.js'

/**
 * The guess a bulk write is first planned on (LEADS_BULK_GUESS): every row is a new person and
 * the customer's setup is the one kept. The writer plans the rows on it, and writes their insert
 * out, while the request's first round trip (the match-key locks and the candidates) is out, the
 * longer part of its time; it sends that plan only when the reads bear the guess out, and plans
 * again from what was read otherwise, so the guess never changes an answer.
 */
export class BulkGuess {
  /**
   * Customers whose latest bulk write found stored leads among its rows' matches. Their next bulk
   * is not guessed: a customer re-sending people it has already would otherwise plan every
   * request twice.
   */
  private readonly matching = new KeptPerCustomer<boolean>()
  /** Bulk writes planned on the guess (used) and planned again after their reads (dropped). */
  readonly counts = {used: 0, dropped: 0}

  constructor(
    private readonly setups: SetupCache,
    /** LEADS_BULK_GUESS: off plans every bulk write after its reads. */
    private readonly enabled: boolean,
  ) {}

  /** The setup a guess for the customer assumes, or null when none is kept, its latest bulk matched stored leads, or the guess is off. */
  assumedSetup(customerId: string): CustomerSetup | null {
    if (!this.enabled || this.matching.get(customerId)) return null
    return this.setups.get(customerId)?.setup ?? null
  }

  /**
   * Whether the reads bear out a guess made on `assumed` (null: none was made): the setup they
   * gave is the one assumed, and no row matched a stored lead. Remembers whether this write
   * matched, for the customer's next one.
   */
  holds(customerId: string, assumed: CustomerSetup | null, known: CustomerSetup, existing: readonly MatchEntry[]): boolean {
    this.matching.set(customerId, existing.length > 0)
    if (assumed === null) return false
    const holds = assumed === known && existing.length === 0
    this.counts[holds ? 'used' : 'dropped']++
    return holds
  }
}
