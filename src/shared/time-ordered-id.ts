import {randomFillSync} from 'node:crypto'

import {v7} from 'uuid'

/** Ids drawn from one fill of the random pool. */
const POOL_IDS = 256

/**
 * UUIDv7s (time-ordered, so new rows append to a primary key instead of splitting its pages),
 * monotonic within a millisecond as uuid's own v7 is, with their random bytes taken from a pool
 * filled 256 ids at a time: one random draw per id (uuid's default) is a noticeable part of a
 * bulk request of new leads.
 */
export class TimeOrderedIds {
  private pool = new Uint8Array(0)
  private taken = 0
  private msecs = Number.NEGATIVE_INFINITY
  private seq = 0

  next(now = Date.now()): string {
    if (this.taken + 16 > this.pool.length) {
      this.pool = randomFillSync(new Uint8Array(16 * POOL_IDS))
      this.taken = 0
    }
    const random = this.pool.subarray(this.taken, this.taken + 16)
    this.taken += 16
    // The sequence starts at random in each new millisecond and counts up within it (uuid's updateV7State).
    if (now > this.msecs) {
      this.msecs = now
      this.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!
    } else {
      this.seq = (this.seq + 1) | 0
      if (this.seq === 0) this.msecs++
    }
    return v7({random, msecs: this.msecs, seq: this.seq})
  }
}

const ids = new TimeOrderedIds()

/** The next UUIDv7 of this process. */
export function timeOrderedId(): string {
  return ids.next()
}
