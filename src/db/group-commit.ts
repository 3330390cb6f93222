import {WriteOutcomeUnknown} from './errors.js'

/** One item's result from a group: its value, or the error that refused it alone. */
export type Settled<O> = {value: O} | {error: unknown}

interface GroupCommitOptions {
  /**
   * Groups written at once; more items wait and go together in the next group. A group stops
   * counting once its write says it no longer holds the database up (`release`, below).
   */
  maxInFlight: number
  /** Items per group at most. */
  maxGroup: number
  /**
   * A group in flight longer than this stops counting against maxInFlight, so one that waits on
   * a row lock (a bulk request holding the same person, a long transaction) does not hold up
   * every other write of the process.
   */
  slowMs: number
}

/**
 * Group commit for independent writes: an item that finds a free slot is written at once (alone
 * when the process is idle, so a lone request waits for nobody), and the items that arrive while
 * the slots are busy go together in the next group, one transaction and its round trips shared.
 *
 * `write` settles each item of a group on its own, or throws when the group as a whole failed
 * (a statement refused, a lost connection). A failed group of several is written again item by
 * item, so one item's conflict never fails the others; a failed item alone gets the error, and
 * so does every item of a group whose outcome is unknown (WriteOutcomeUnknown).
 * `write` may call `release` before it ends, when what is left of it does not keep the next
 * group from being written (a COMMIT waiting on the disk): the group stops counting against
 * maxInFlight then, and its items are still settled when it ends.
 */
export class GroupCommitter<I, O> {
  private readonly waiting: Array<{item: I; settle: (outcome: Settled<O>) => void}> = []
  private counted = 0

  constructor(
    private readonly write: (items: readonly I[], release: () => void) => Promise<Array<Settled<O>>>,
    private readonly options: GroupCommitOptions,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.waiting.push({item, settle: (outcome) => ('value' in outcome ? resolve(outcome.value) : reject(outcome.error))})
      this.startGroups()
    })
  }

  /** Starts what the free slots take of the waiting items; true when it started a group. */
  private startGroups(): boolean {
    let started = false
    while (this.counted < this.options.maxInFlight && this.waiting.length > 0) {
      void this.runGroup(this.waiting.splice(0, this.options.maxGroup))
      started = true
    }
    return started
  }

  private async runGroup(group: Array<{item: I; settle: (outcome: Settled<O>) => void}>): Promise<void> {
    this.counted++
    let counting = true
    /** Frees the group's slot; true when that started the next group. */
    const release = () => {
      if (!counting) return false
      counting = false
      this.counted--
      return this.startGroups()
    }
    const slow = setTimeout(release, this.options.slowMs)
    try {
      const outcomes = await this.writeGroup(
        group.map((entry) => entry.item),
        release,
      )
      // A next group started here goes to the database first, then this group's items are settled:
      // answering them (a create's HTTP response: Koa, JSON, a socket write) costs the event loop
      // time the database would otherwise wait through idle (docs/design.md, "How a write is
      // done"). With none, they are answered at once.
      clearTimeout(slow)
      const settle = () => group.forEach((entry, index) => entry.settle(outcomes[index]!))
      if (release()) setImmediate(settle)
      else settle()
    } finally {
      clearTimeout(slow)
      release()
    }
  }

  private async writeGroup(items: readonly I[], release: () => void): Promise<Array<Settled<O>>> {
    try {
      return await this.write(items, release)
    } catch (error) {
      // A group whose COMMIT was lost may have been stored: written again item by item, a create
      // without its Idempotency-Key would be stored twice. Each item's client decides, with its key.
      if (items.length === 1 || error instanceof WriteOutcomeUnknown) return items.map(() => ({error}))
      return Promise.all(items.map(async (item) => (await this.writeGroup([item], release))[0]!))
    }
  }
}
