/** What a lane holds: anything with an id that belongs to one webhook. */
export interface LaneItem {
  id: string
  webhookId: string
}

/**
 * A worker's deliveries per webhook, off the wire: each webhook's lane of due deliveries in
 * arrival order, and the deliveries scheduled for later (retries), which join their lane when
 * due. `pick` serves the lanes round-robin, so a webhook with a long lane takes one slot per
 * turn like any other, and one with nothing due takes none.
 */
export class WebhookLanes<T extends LaneItem> {
  private readonly ready = new Map<string, Fifo<T>>()
  /** Webhooks with due deliveries, in the order they are served next. */
  private rotation: string[] = []
  private readonly scheduled = new MinHeap<{at: number; item: T}>()
  /** When each scheduled item is due: a heap entry whose item was dropped or rescheduled is skipped. */
  private readonly dueAt = new Map<string, number>()
  private readonly sizes = new Map<string, number>()

  /** Adds a delivery, due now or at `at`. */
  add(item: T, at: number, now: number): void {
    this.sizes.set(item.webhookId, this.size(item.webhookId) + 1)
    if (at <= now) this.enqueue(item)
    else this.schedule(item, at)
  }

  /** Puts deliveries picked but not sent back at the head of their lanes, in their order. */
  putBack(items: readonly T[]): void {
    for (let i = items.length - 1; i >= 0; i--) this.laneOf(items[i]!.webhookId, 'first').unshift(items[i]!)
  }

  /** Moves the scheduled deliveries due by `now` into their lanes; returns how many. */
  releaseDue(now: number): number {
    let moved = 0
    for (let top = this.scheduled.peek(); top && top.at <= now; top = this.scheduled.peek()) {
      this.scheduled.pop()
      if (this.dueAt.get(top.item.id) !== top.at) continue
      this.dueAt.delete(top.item.id)
      this.enqueue(top.item)
      moved++
    }
    return moved
  }

  /** When the earliest scheduled delivery is due; null when none is. */
  nextDueAt(): number | null {
    for (let top = this.scheduled.peek(); top; top = this.scheduled.peek()) {
      if (this.dueAt.get(top.item.id) === top.at) return top.at
      this.scheduled.pop()
    }
    return null
  }

  /**
   * Takes up to `budget` due deliveries, one per webhook per turn, each webhook at most
   * `allowance(webhookId)` in all; the lanes served last this time are served first next time.
   */
  pick(budget: number, allowance: (webhookId: string) => number): T[] {
    const picked: T[] = []
    const left = new Map<string, number>()
    let served = true
    while (budget > picked.length && served) {
      served = false
      for (const webhookId of [...this.rotation]) {
        if (picked.length >= budget) break
        const allowed = left.get(webhookId) ?? allowance(webhookId)
        if (allowed <= 0) {
          left.set(webhookId, 0)
          continue
        }
        const item = this.ready.get(webhookId)!.shift()!
        picked.push(item)
        left.set(webhookId, allowed - 1)
        this.sizes.set(webhookId, this.size(webhookId) - 1)
        served = true
        this.rotation = this.rotation.filter((id) => id !== webhookId)
        if (this.ready.get(webhookId)!.length > 0) this.rotation.push(webhookId)
        else this.ready.delete(webhookId)
      }
    }
    return picked
  }

  /** Counts a picked delivery as the lane's again, before putBack or add. */
  restore(items: readonly T[]): void {
    for (const item of items) this.sizes.set(item.webhookId, this.size(item.webhookId) + 1)
  }

  /** Deliveries of the webhook in its lane or scheduled. */
  size(webhookId: string): number {
    return this.sizes.get(webhookId) ?? 0
  }

  /** How many of the webhook's deliveries are due now. */
  dueCount(webhookId: string): number {
    return this.ready.get(webhookId)?.length ?? 0
  }

  /** The webhooks with a delivery due now. */
  webhooksWithDue(): string[] {
    return [...this.rotation]
  }

  /** Removes and returns every delivery of the webhook (its lane and its scheduled ones). */
  drop(webhookId: string): T[] {
    const dropped = this.ready.get(webhookId)?.drain() ?? []
    this.ready.delete(webhookId)
    this.rotation = this.rotation.filter((id) => id !== webhookId)
    for (const item of this.scheduledItems()) {
      if (item.webhookId !== webhookId) continue
      this.dueAt.delete(item.id)
      dropped.push(item)
    }
    this.sizes.delete(webhookId)
    return dropped
  }

  /** Removes one delivery wherever it is; true when it was here. */
  remove(id: string, webhookId: string): boolean {
    const lane = this.ready.get(webhookId)
    const removed = (lane?.remove((item) => item.id === id) ?? false) || this.dueAt.delete(id)
    if (!removed) return false
    if (lane && lane.length === 0) {
      this.ready.delete(webhookId)
      this.rotation = this.rotation.filter((each) => each !== webhookId)
    }
    this.sizes.set(webhookId, this.size(webhookId) - 1)
    return true
  }

  /** Removes and returns everything (the worker is stopping). */
  drainAll(): T[] {
    const all = [...[...this.ready.values()].flatMap((lane) => lane.drain()), ...this.scheduledItems()]
    this.ready.clear()
    this.rotation = []
    this.dueAt.clear()
    this.sizes.clear()
    return all
  }

  /** How many are due now and how many are scheduled, across every webhook. */
  counts(): {due: number; scheduled: number} {
    let due = 0
    for (const lane of this.ready.values()) due += lane.length
    return {due, scheduled: this.dueAt.size}
  }

  private scheduledItems(): T[] {
    const seen = new Set<string>()
    return this.scheduled.items().flatMap(({at, item}) => (this.dueAt.get(item.id) === at && !seen.has(item.id) && seen.add(item.id) ? [item] : []))
  }

  private enqueue(item: T): void {
    this.laneOf(item.webhookId, 'last').push(item)
  }

  /** The webhook's lane of due deliveries; a new one is served first or last in the rotation. */
  private laneOf(webhookId: string, turn: 'first' | 'last'): Fifo<T> {
    let lane = this.ready.get(webhookId)
    if (!lane) {
      lane = new Fifo<T>()
      this.ready.set(webhookId, lane)
      if (turn === 'first') this.rotation.unshift(webhookId)
      else this.rotation.push(webhookId)
    }
    return lane
  }

  private schedule(item: T, at: number): void {
    this.dueAt.set(item.id, at)
    this.scheduled.push({at, item})
  }
}

/** A first-in-first-out queue with O(1) shift (an array and a head index). */
class Fifo<T> {
  private items: T[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  unshift(item: T): void {
    if (this.head > 0) this.items[--this.head] = item
    else this.items.unshift(item)
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined
    const item = this.items[this.head]!
    this.items[this.head++] = undefined as T
    // Compact once the dead head outweighs the live part, so memory follows the length.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  remove(match: (item: T) => boolean): boolean {
    const index = this.items.findIndex((item, i) => i >= this.head && match(item))
    if (index === -1) return false
    this.items.splice(index, 1)
    return true
  }

  drain(): T[] {
    const all = this.items.slice(this.head)
    this.items = []
    this.head = 0
    return all
  }
}

/** A binary min-heap on `at`. */
class MinHeap<E extends {at: number}> {
  private readonly heap: E[] = []

  push(entry: E): void {
    const heap = this.heap
    heap.push(entry)
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1
      if (heap[parent]!.at <= heap[i]!.at) break
      ;[heap[parent], heap[i]] = [heap[i]!, heap[parent]!]
      i = parent
    }
  }

  peek(): E | undefined {
    return this.heap[0]
  }

  pop(): E | undefined {
    const heap = this.heap
    const top = heap[0]
    const last = heap.pop()
    if (heap.length > 0 && last) {
      heap[0] = last
      for (let i = 0; ;) {
        const left = 2 * i + 1
        const right = left + 1
        let smallest = i
        if (left < heap.length && heap[left]!.at < heap[smallest]!.at) smallest = left
        if (right < heap.length && heap[right]!.at < heap[smallest]!.at) smallest = right
        if (smallest === i) break
        ;[heap[smallest], heap[i]] = [heap[i]!, heap[smallest]!]
        i = smallest
      }
    }
    return top
  }

  items(): E[] {
    return [...this.heap]
  }
}
