import {createHash} from 'node:crypto'

import type {RedisConnection} from '../db/redis.js'

/** A webhook as the in-flight record keys it: its customer (the shard key) and its id. */
export interface WebhookRef {
  customerId: string
  id: string
}

/**
 * The deliveries on the wire per webhook, shared by every worker: what keeps a webhook's
 * deliveries in flight at or under its cap however many workers send. Each slot names its
 * delivery and lapses at `heldUntil`, so a worker that dies holding slots frees them by itself.
 */
export interface InFlightSlots {
  /**
   * Releases `done` and takes a slot for as many of `wanted` as the cap leaves room for, in that
   * order, in one step; returns the ids granted.
   */
  exchange(webhook: WebhookRef, cap: number, done: readonly string[], wanted: readonly string[], heldUntil: number, now: number): Promise<string[]>
  /** The deliveries on the wire now, per webhook asked about. */
  onTheWire(webhooks: readonly WebhookRef[], now: number): Promise<Map<string, string[]>>
}

/**
 * Which of `wanted` an exchange grants, given the deliveries that hold a slot after the release:
 * those already holding one keep it, then new ones in order while the cap leaves room. The Redis
 * script applies the same rule.
 */
export function grantSlots(held: ReadonlySet<string>, wanted: readonly string[], cap: number): {renewed: string[]; fresh: string[]} {
  const renewed = wanted.filter((id) => held.has(id))
  const fresh = wanted.filter((id) => !held.has(id)).slice(0, Math.max(0, cap - held.size))
  return {renewed, fresh}
}

/** How long after its slot lapses an idle webhook's set stays in Redis. */
const IDLE_KEY_TTL_MS = 60_000

/**
 * The exchange as one script, so no other worker's exchange runs between the count and the
 * take: releases the done, drops lapsed slots, then adds wanted ids while the set is under cap.
 * KEYS[1] the webhook's set (member: delivery id, score: when the slot lapses);
 * ARGV: now, heldUntil, cap, number of done ids, the done ids, the wanted ids.
 */
const EXCHANGE_SCRIPT = `
local key = KEYS[1]
local now, held_until, cap, done = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 5, 4 + done do redis.call('ZREM', key, ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local room = cap - redis.call('ZCARD', key)
local granted = {}
for i = 5 + done, #ARGV do
  if redis.call('ZSCORE', key, ARGV[i]) then
    redis.call('ZADD', key, held_until, ARGV[i])
    granted[#granted + 1] = ARGV[i]
  elseif room > 0 then
    redis.call('ZADD', key, held_until, ARGV[i])
    room = room - 1
    granted[#granted + 1] = ARGV[i]
  end
end
redis.call('PEXPIRE', key, tonumber(held_until) - now + ${IDLE_KEY_TTL_MS})
return granted`

const EXCHANGE_SHA1 = createHash('sha1').update(EXCHANGE_SCRIPT).digest('hex')

/** The in-flight record in Redis: a sorted set per webhook, shared by every worker on that Redis. */
export class RedisInFlightSlots implements InFlightSlots {
  constructor(private readonly redis: RedisConnection) {}

  async exchange(webhook: WebhookRef, cap: number, done: readonly string[], wanted: readonly string[], heldUntil: number, now: number): Promise<string[]> {
    if (done.length === 0 && wanted.length === 0) return []
    const call = {keys: [keyOf(webhook)] as [string], arguments: [String(now), String(heldUntil), String(cap), String(done.length), ...done, ...wanted]}
    // By its hash: the script's text goes out only when a server (a new one, a restarted one, another cluster node) does not know it yet.
    const granted = await this.redis.commands.evalSha(EXCHANGE_SHA1, call).catch((error: Error) => {
      if (!String(error.message).startsWith('NOSCRIPT')) throw error
      return this.redis.commands.eval(EXCHANGE_SCRIPT, call)
    })
    return granted as string[]
  }

  async onTheWire(webhooks: readonly WebhookRef[], now: number): Promise<Map<string, string[]>> {
    const sets = await Promise.all(webhooks.map((webhook) => this.redis.commands.zRangeByScore(keyOf(webhook), `(${now}`, '+inf')))
    return new Map(webhooks.map((webhook, i) => [webhook.id, sets[i]!]))
  }
}

function keyOf(webhook: WebhookRef): string {
  return `leads:in-flight:${webhook.id}`
}

/**
 * Redis while it answers, the database while it does not. During a Redis outage each record
 * counts only its own slots, so a webhook can briefly have up to twice its cap in flight.
 */
export class FallbackInFlightSlots implements InFlightSlots {
  constructor(
    private readonly redis: RedisConnection,
    private readonly redisSlots: RedisInFlightSlots,
    private readonly databaseSlots: InFlightSlots,
  ) {}

  async exchange(webhook: WebhookRef, cap: number, done: readonly string[], wanted: readonly string[], heldUntil: number, now: number): Promise<string[]> {
    if (this.redis.isReady) {
      try {
        return await this.redisSlots.exchange(webhook, cap, done, wanted, heldUntil, now)
      } catch {
        // Redis failed mid-call: the database keeps the record until it answers again.
      }
    }
    return this.databaseSlots.exchange(webhook, cap, done, wanted, heldUntil, now)
  }

  async onTheWire(webhooks: readonly WebhookRef[], now: number): Promise<Map<string, string[]>> {
    const [fromRedis, fromDatabase] = await Promise.all([
      this.redis.isReady ? this.redisSlots.onTheWire(webhooks, now).catch(() => new Map<string, string[]>()) : new Map<string, string[]>(),
      this.databaseSlots.onTheWire(webhooks, now),
    ])
    return new Map(webhooks.map((webhook) => [webhook.id, [...(fromRedis.get(webhook.id) ?? []), ...(fromDatabase.get(webhook.id) ?? [])]]))
  }
}
