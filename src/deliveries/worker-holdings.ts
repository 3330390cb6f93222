import type {ClaimedDelivery, SendingWebhook} from './delivery-claims.js'
import {type LaneItem, WebhookLanes} from './webhook-lanes.js'

/** Deliveries one worker holds at most, across every webhook: past it, new ones wait in the database. */
const MAX_HELD = 50_000

/** A delivery this worker holds: in its webhook's lane, scheduled for a retry, or on the wire. */
export interface Held extends LaneItem {
  claimed: ClaimedDelivery
  attemptsMade: number
  /** The number the next attempt is recorded with (a redelivered delivery keeps its earlier attempts). */
  nextAttemptNumber: number
}

/** A webhook this worker holds deliveries of: as last read, and its deliveries on the wire. */
export interface WebhookEntry extends SendingWebhook {
  /** Deliveries picked for the wire, counted from the pick (see SlotExchange). */
  onTheWire: number
  /** Deliveries whose attempt is on the wire: their in-flight slots are renewed until it ends. */
  wire: Set<string>
  /** Deliveries whose attempt ended, their in-flight slots to release with the next exchange. */
  done: string[]
  /** Until when other workers hold its whole cap (see REMOTE_CAP_RETRY_MS). */
  blockedUntil: number
  /** Some of its deliveries were left in the database for want of room: the lane refills from there as it drains. */
  parked: boolean
  refilling: boolean
}

/**
 * What one delivery worker holds, shared by its parts: its deliveries (in a lane, scheduled for a
 * retry, or on the wire), the webhooks they belong to as last read, how many attempts are on the
 * wire, and the callers of process() waiting for a delivery to leave the worker.
 */
export class WorkerHoldings {
  readonly lanes = new WebhookLanes<Held>()
  readonly held = new Map<string, Held>()
  readonly webhooks = new Map<string, WebhookEntry>()
  /** Attempts on the wire, across every webhook. */
  onTheWire = 0
  /** Attempts on the wire per customer (customers with none are left out). */
  readonly customersOnTheWire = new Map<string, number>()
  private readonly leaving = new Map<string, Array<() => void>>()

  /** `laneLimit`: deliveries of one webhook held at most. */
  constructor(private readonly laneLimit: number) {}

  /** Puts a claimed delivery in its webhook's lane, due at its next attempt. */
  hold(delivery: ClaimedDelivery, now: number): void {
    const held: Held = {
      id: delivery.delivery.id,
      webhookId: delivery.webhook.id,
      claimed: delivery,
      attemptsMade: delivery.delivery.attemptsMade,
      nextAttemptNumber: delivery.priorAttempts + 1,
    }
    this.held.set(held.id, held)
    this.lanes.add(held, delivery.delivery.nextAttemptAt, now)
  }

  /** Room in a webhook's lane for more deliveries; none once the worker holds MAX_HELD. */
  roomFor(webhookId: string): number {
    if (this.held.size >= MAX_HELD) return 0
    return this.laneLimit - this.lanes.size(webhookId) - (this.webhooks.get(webhookId)?.onTheWire ?? 0)
  }

  /** Counts deliveries of a webhook onto the wire (positive) or off it (negative). */
  sentOut(webhookId: string, change: number): void {
    const entry = this.webhooks.get(webhookId)!
    this.onTheWire += change
    entry.onTheWire += change
    const customerId = entry.webhook.customerId
    const customer = (this.customersOnTheWire.get(customerId) ?? 0) + change
    if (customer > 0) this.customersOnTheWire.set(customerId, customer)
    else this.customersOnTheWire.delete(customerId)
  }

  /** Resolves once this worker has let the delivery go (see letGo). */
  untilLetGo(deliveryId: string): Promise<void> {
    return new Promise<void>((resolve) => this.leaving.set(deliveryId, [...(this.leaving.get(deliveryId) ?? []), resolve]))
  }

  /** This worker no longer holds the delivery; whoever waits on process() for it goes on. */
  letGo(deliveryId: string): void {
    this.held.delete(deliveryId)
    for (const resolve of this.leaving.get(deliveryId) ?? []) resolve()
    this.leaving.delete(deliveryId)
  }

  /** Deliveries this worker holds by state (delivery-state.ts), for the metrics. */
  states(): Record<string, number> {
    const {scheduled} = this.lanes.counts()
    let waiting = 0
    let held = 0
    for (const webhookId of this.lanes.webhooksWithDue()) {
      const due = this.lanes.dueCount(webhookId)
      if (this.webhooks.get(webhookId)?.webhook.breaker.state === 'closed') waiting += due
      else held += due
    }
    return {waiting, held, backing_off: scheduled, delivering: this.onTheWire}
  }
}
