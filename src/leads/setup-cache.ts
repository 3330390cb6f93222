import type {CustomerSetup} from './lead-input.js'

/** Customers whose setup is kept at most; the least recently stored goes first. */
const CAPACITY = 10_000

/**
 * The stages and custom-field definitions of recently active customers, each with the setup
 * version it was read at (customers.setup_version, bumped by every change to them). A write reads
 * only the version in its first batch and uses the kept setup while the version matches, so a
 * push does not read the same definitions on every request, and no daemon uses definitions
 * another process changed.
 */
export class SetupCache {
  private readonly entries = new Map<string, {version: number; setup: CustomerSetup}>()

  get(customerId: string): {version: number; setup: CustomerSetup} | undefined {
    return this.entries.get(customerId)
  }

  set(customerId: string, version: number, setup: CustomerSetup): void {
    this.entries.delete(customerId)
    this.entries.set(customerId, {version, setup})
    if (this.entries.size > CAPACITY) this.entries.delete(this.entries.keys().next().value as string)
  }
}
