import type {Clock} from '../../src/shared/clock.js'

/** A clock tests move by hand, so nothing waits on wall time. */
export class ManualClock implements Clock {
  constructor(private current = Date.UTC(2026, 10, 22, 12)) {}

  now(): number {
    return this.current
  }

  advance(ms: number): void {
    this.current += ms
  }
}
