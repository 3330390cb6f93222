import type {CustomerSetup} from './lead-input.js'

/** Customers whose values are kept at most; the least recently stored goes first. */
const CAPACITY = 10_000

/** Something kept per recently active customer, at most CAPACITY of them. */
export class KeptPerCustomer<V> {
  private readonly entries = new Map<string, V>()

  get(customerId: string): V | undefined {
    return this.entries.get(customerId)
  }

  set(customerId: string, value: V): void {
    this.entries.delete(customerId)
    this.entries.set(customerId, value)
    if (this.entries.size > CAPACITY) this.entries.delete(this.entries.keys().next().value as string)
  }
}

/** A customer's setup with the setup version it was read at. */
export interface VersionedSetup {
  version: number
  setup: CustomerSetup
}

/**
 * The stages and custom-field definitions of recently active customers, each with the setup
 * version it was read at (customers.setup_version, bumped by every change to them or to the
 * customer's webhooks). A write reads only the version in its first batch and uses the kept setup
 * while the version matches, so a push does not read the same definitions on every request, and
 * no daemon uses definitions another process changed.
 */
export class SetupCache extends KeptPerCustomer<VersionedSetup> {}
