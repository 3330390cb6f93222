import type {CustomersStore} from '../customers/customers-store.js'
import {isGuardRefusal, KeyClaimRefusal} from '../db/errors.js'
import type {Statement} from '../db/statements.js'
import type {CustomerSetup, LeadDraft} from './lead-input.js'
import type {LeadMatchStore} from './lead-match-store.js'
import {newPeopleChecks} from './lead-matching.js'
import {KeptPerCustomer, type SetupCache, type VersionedSetup} from './setup-cache.js'

/** What asNew assumes of a customer: its setup and its lead.created subscribers, both as of one setup version. */
export interface KeptForGuess {
  version: number
  setup: CustomerSetup
  subscribers: string[]
}

/**
 * The guess a group of creates is first written on: every create is a new person, and each
 * customer's setup (stages, fields and the webhooks an event goes to, one version for all three)
 * is as its latest write found it. What it assumes is kept here, and the checks that hold the
 * write to it, each of which fails the batch: the group's match keys registered as new
 * (LeadMatchStore.newMatchKeys, refused when a stored lead may have one), and a guard statement
 * (guardStatement) that probes the customer's setup version.
 */
export class CreateGuess {
  constructor(
    private readonly matches: LeadMatchStore,
    private readonly customers: CustomersStore,
    private readonly setups: SetupCache,
    /** LEADS_CREATE_GUESS: off writes every group checked. */
    private readonly enabled: boolean,
  ) {}

  /** The lead.created subscribers each customer's latest checked write read, with the setup version read before them. */
  private readonly subscribers = new KeptPerCustomer<{version: number; ids: string[]}>()
  /**
   * Customers whose latest group merged into a stored lead. Their next group is written checked:
   * a refused guess costs a round trip and a rollback, so a customer pushing mostly people it
   * has already does not pay it on every create.
   */
  private readonly merging = new KeptPerCustomer<boolean>()

  /**
   * What the guess assumes of every customer of the group, or null when one has nothing kept, or
   * its kept setup and subscribers are of different versions (or the guess is off).
   */
  kept(requests: ReadonlyArray<{customerId: string}>): Map<string, KeptForGuess> | null {
    if (!this.enabled) return null
    const kept = new Map<string, KeptForGuess>()
    for (const {customerId} of requests) {
      const setup = this.setups.get(customerId)
      const subscribers = this.subscribers.get(customerId)
      if (!setup || subscribers?.version !== setup.version || this.merging.get(customerId)) return null
      kept.set(customerId, {...setup, subscribers: subscribers.ids})
    }
    return kept
  }

  /**
   * The subscribers a checked write read for the customer, read after `setup` in the same batch:
   * when a change committed in between, the pair looks older than it is and the guard refuses it.
   */
  rememberSubscribers(customerId: string, setup: VersionedSetup, subscribers: string[]): void {
    this.subscribers.set(customerId, {version: setup.version, ids: subscribers})
  }

  /** Which customers of a written group merged into a stored lead: their next group is not guessed. */
  rememberMerging(customerIds: readonly string[], merging: ReadonlySet<string>): void {
    for (const customerId of new Set(customerIds)) this.merging.set(customerId, merging.has(customerId))
  }

  /** The customer's match keys registered as new (refused when a lead may have one), and the guard's probe of its setup version. */
  checks(customerId: string, drafts: readonly LeadDraft[], assumed: KeptForGuess): {registrations: Statement[]; probes: Statement[]} {
    return {registrations: newPeopleChecks(this.matches, customerId, drafts), probes: [this.customers.setupChangedProbe(customerId, assumed.version)]}
  }
}

/**
 * A guess refused for its keys: one stored already, or still held by its first request; the
 * checked write then tells which. The refusals of the registrations and the guard go on checked
 * inside the transaction (asNew's orElse).
 */
export function isRefusedGuess(error: unknown): boolean {
  return isGuardRefusal(error) || error instanceof KeyClaimRefusal
}
