import {expect} from 'chai'

import {createDb} from '../../../src/db/knex.js'
import {backends} from '../../helpers/backends.js'
import {type ShardKeys, unpinnedTables} from '../../helpers/shard-key.js'
import {readRecording, SQL_RECORD_VARIABLE} from '../../helpers/sql-recorder.js'

/**
 * Sharding discipline (docs/operations.md, "Appendix: sharding by customer"): customer_id is the shard key,
 * so every statement on a customer's tables names the customer, and a router sends it to one
 * shard. Runs after every test file (the last spec of the MySQL run, and once the parallel SQLite
 * run has ended: .mocharc.cjs) over every statement the suite sent, from its processes and from
 * the daemons and commands they started.
 */

// Tables that belong to a customer but carry no customer_id: each is reached through its
// parent's id, the column named here, which counts as its shard key. A sharded cluster routes
// them with a lookup vindex on that id (or the column added); docs/operations.md says which.
const OWNED_THROUGH_PARENT: Record<string, {column: string; why: string}> = {
  api_tokens: {column: 'key_id', why: 'a token belongs to its key'},
  delivery_attempts: {column: 'delivery_id', why: 'an attempt belongs to its delivery'},
  rate_limit_overrides: {column: 'scope_id', why: 'an override belongs to its customer or key (scope_type says which)'},
}

// Tables of the service itself, not of any customer: unsharded (a Vitess unsharded keyspace).
const GLOBAL_TABLES: Record<string, string> = {
  knex_migrations: 'the migrations applied',
  knex_migrations_lock: 'the migration lock',
  database_writers: 'the daemons of a Galera cluster and the node each writes through',
  master_key_check: 'the fingerprint of the master key the webhook secrets are sealed with',
}

interface Allowed {
  /** Matches the normalised statement (test/helpers/sql-recorder.ts normalizeSql). */
  sql: RegExp
  /** Why the statement is cross-customer, and how a sharded cluster runs it. */
  why: string
}

/**
 * Statements that are cross-customer by design. Each says why; docs/operations.md lists them
 * with how each behaves on a sharded cluster.
 */
export const CROSS_CUSTOMER: readonly Allowed[] = [
  // Migrations: data backfills over every customer, run once by `leads migrate` (schema changes
  // touch no rows and pass anyway). On a sharded cluster each shard runs them over its own rows.
  {
    sql: /^UPDATE leads (JOIN|SET change_seq = numbered\.seq FROM) \(SELECT id, ROW_NUMBER\(\) OVER \(PARTITION BY customer_id /,
    why: 'migration add_lead_change_feed: numbers every existing lead per customer',
  },
  {
    sql: /^INSERT INTO lead_change_sequences \(customer_id, last_seq\) SELECT customer_id, MAX\(change_seq\) FROM leads GROUP BY customer_id$/,
    why: 'migration add_lead_change_feed: one counter per customer',
  },
  {
    sql: /^INSERT INTO lead_counts \(.*\) SELECT customer_id, .* FROM leads GROUP BY customer_id, /,
    why: 'migration add_lead_counts: counts every customer\u2019s leads',
  },
  {
    sql: /^update `webhooks` set `disabled_by` = \? where `is_active` = \? and (`disabled_reason` = \?|`disabled_by` is null)$/,
    why: 'migration add_webhooks_disabled_by: fills the new column of every disabled webhook',
  },

  // Operator commands over every customer (`leads customers list`, `leads keys list`, the
  // maintenance reindex and recount without --customer, the search-words migration's rebuild;
  // `leads deliveries list` without --webhook is with the other deliveries statements below).
  {sql: /^select \* from `customers` order by `created_at` asc, `id` asc$/, why: '`leads customers list`: every customer'},
  {
    sql: /^select `id` from `customers`$/,
    why: 'maintenance reindex / recount of every customer (and the search-words migration): the customers to walk, each then one by one',
  },
  {
    sql: /^select `api_keys`\.\*, \(select max\(`retires_at`\) from `api_tokens` where `api_tokens`\.`key_id` = `api_keys`\.`id` and `api_tokens`\.`retires_at` > \?\) as `previous_tokens_retire_at` from `api_keys` order by `created_at` asc, `id` asc$/,
    why: '`leads keys list` without --customer: every key, with when its previous tokens retire (tokens through their key)',
  },
  {
    sql: /^select `rate_limit_overrides`\.\*, `api_keys`\.`customer_id` as `key_customer_id` from `rate_limit_overrides` left join `api_keys` on `api_keys`\.`id` = `rate_limit_overrides`\.`scope_id` and `rate_limit_overrides`\.`scope_type` = \? order by `rate_limit_overrides`\.`scope_type` asc, `rate_limit_overrides`\.`scope_id` asc$/,
    why: '`leads ratelimit list` without --customer: every override, with the customer of each key override',
  },

  // Operator commands that name one row by its id (ids are UUIDs or wh_ ids, unique across
  // customers): `leads keys revoke`, `leads webhooks inspect|show`, `leads deliveries show`.
  {sql: /^select \* from `api_keys` where `id` = \? limit \?$/, why: '`leads keys rotate|revoke <id>`: the operator names a key, not its customer'},
  {sql: /^update `api_keys` set `revoked_at` = \? where `id` = \? and `revoked_at` is null$/, why: '`leads keys revoke <id>`'},
  {
    sql: /^select \* from `webhooks` where `id` = \? limit \?$/,
    why: 'operator commands that name a webhook (`leads webhooks inspect|enable|disable|delete|test|rotate-secret <id>`), and the worker re-reading one after recording its health',
  },
  {
    sql: /^select \* from `deliveries` where `webhook_id` = \?( and `status` = \?)?( and \(`created_at` < \? or \(`created_at` = \? and `id` < \?\)\))? order by `created_at` desc, `id` desc limit \?$/,
    why: '`leads webhooks inspect <id>` and `leads deliveries list --webhook <id> [--cursor]`: the deliveries of a webhook the operator named, a page of them after a cursor',
  },
  {
    sql: /^select \* from `deliveries`( where (`status` = \?)?( and )?(\(`created_at` < \? or \(`created_at` = \? and `id` < \?\)\))?)? order by `created_at` desc, `id` desc limit \?$/,
    why: '`leads deliveries list` without --webhook [--status] [--cursor]: the operator lists the recent deliveries of every customer, a page of them after a cursor',
  },
  {sql: /^select \* from `deliveries` where `id` = \? limit \?$/, why: '`leads deliveries show <id>` and `redeliver`, and the worker re-reading a delivery'},
  {sql: /^select \* from `events` where `id` = \? limit \?$/, why: '`leads deliveries show <id>`: the event of the delivery shown'},
  {
    sql: /^select `deliveries`\.\*, `events`\.`type` as `event_type`, `events`\.`lead_id` as `event_lead_id` from `deliveries` left join `events` on `events`\.`id` = `deliveries`\.`event_id` and `events`\.`customer_id` = `deliveries`\.`customer_id` where `deliveries`\.`updated_at` >= \?( and `deliveries`\.`webhook_id` = \?)? order by /,
    why: '`leads deliveries tail` without --customer: every customer\u2019s (or one webhook\u2019s) recent deliveries',
  },
  {
    sql: /^select count\(\*\) as n, min\(created_at\) as oldest from `deliveries` where `status` in \(\?, …\)$/,
    why: '`leads status` and the backlog metric: unfinished deliveries of every customer',
  },

  // Authentication: a request carries only its token; the key (and so the customer) is what
  // the lookup finds. The last-used times of many keys are flushed together.
  {
    sql: /^select `api_keys`\.\*, `api_tokens`\.`retires_at` as `token_retires_at` from `api_tokens` inner join `api_keys` on `api_keys`\.`id` = `api_tokens`\.`key_id` where `api_tokens`\.`token_hash` = \? limit \?$/,
    why: 'key lookup by token hash at authentication',
  },
  {
    sql: /^select `api_tokens`\.`token_hash` from `api_tokens` inner join `api_keys` on `api_keys`\.`id` = `api_tokens`\.`key_id` where `api_keys`\.`internal` = \? and `api_keys`\.`revoked_at` is null$/,
    why: 'the token hashes of every internal key, so an address over its keyless budget can tell them from guesses without a lookup (at most once per 5 s per daemon, and only while some address is over budget)',
  },
  {
    sql: /^update `api_keys` set `last_used_at` = \? where `id` = \? and \(`last_used_at` is null or `last_used_at` < \?\)$/,
    why: 'the authenticator\u2019s batched last-used flush: keys of many customers in one transaction',
  },

  // The delivery worker: the sweeper finds due deliveries of every customer, claims them as one
  // batch, loads their webhooks and events and records each outcome by delivery id.
  {
    sql: /^select `id`, `webhook_id` from \(select `id`, `webhook_id`, ROW_NUMBER\(\) OVER \(PARTITION BY webhook_id ORDER BY next_attempt_at, id\) AS turn from `deliveries` where `status` = \? and `next_attempt_at` <= \? and \(`dispatched_at` is null or `dispatched_at` < \?\)\) as `due` where `turn` <= \? order by `turn` asc limit \?$/,
    why: 'the delivery sweeper: due deliveries no worker holds, of every customer, taken in turns across webhooks',
  },
  {
    sql: /^select \* from `webhooks` where `id` in \(\?(, …)?\)$/,
    why: 'the worker reads again the webhooks it holds deliveries of (secret, settings, breaker), by webhook id',
  },
  {
    sql: /^select `id`(, `webhook_id`)? from `deliveries` where `id` in \(\?(, …)?\)( and not `status` = \?| and `claimed_by` = \? and `status` = \?)?$/,
    why: '`leads deliveries redeliver`: which of the given ids exist, and their webhooks; the worker\u2019s heartbeat: which it still holds',
  },
  {
    sql: /^update `deliveries` set `status` = \?, `claimed_by` = \?, `claimed_until` = \?, `updated_at` = \? where `id` in \(\?(, …)?\) and \(\(`status` = \? and `next_attempt_at` <= \?\) or \(`status` = \? and `claimed_until` < \?\)\)$/,
    why: 'the worker claims a batch of deliveries of many customers',
  },
  {
    sql: /^update `deliveries` set `status` = \?, `claimed_by` = \?, `claimed_until` = \?, `dispatched_at` = \?, `updated_at` = \? where `status` = \? and `claimed_until` < \?$/,
    why: 'the sweeper releases expired claims of every customer',
  },
  {
    sql: /^select `deliveries`\.\*, \(select count\(\*\) from `delivery_attempts` where `delivery_attempts`\.`delivery_id` = `deliveries`\.`id`\) as `prior_attempts` from `deliveries` where `id` in \(\?(, …)?\) and `claimed_by` = \? and `claimed_until` = \? and `status` = \?$/,
    why: 'the worker loads the batch it claimed',
  },
  {
    sql: /^select \* from `(events|webhooks)` where `id` in \(select `(event|webhook)_id` from `deliveries` where `id` in \(\?(, …)?\) and `claimed_by` = \? and `claimed_until` = \? and `status` = \?\)$/,
    why: 'the worker loads the events and webhooks of the batch it claimed',
  },
  {
    sql: /^update `deliveries` set `attempts_made` = attempts_made \+ 1, `updated_at` = \? where `id` in \(\?(, …)?\) and `claimed_by` = \?$/,
    why: 'the worker counts the attempts of its batch',
  },
  {
    sql: /^update `deliveries` set .* where `id` (= \?|in \(\?(, …)?\)) and (`claimed_by` = \?|not `status` = \?)( and `status` = \?)?$/,
    why: 'the worker records outcomes, extends its lease or hands a delivery back, by the delivery ids it holds; redeliver resets by id',
  },
  {
    sql: /^update `webhooks` set `consecutive_failures` = (\?, `failing_since` = \?, `last_success_at` = \? where `id` in \(\?(, …)?\)|consecutive_failures \+ 1, `failing_since` = COALESCE\(failing_since, \?\), `last_failure_at` = \? where `id` = \?)$/,
    why: 'the worker records webhook health after a batch, by webhook id',
  },

  // Housekeeping over every customer.
  {sql: /^delete from `idempotency_keys` where `expires_at` <= \?$/, why: 'the idempotency sweeper deletes expired records of every customer'},

  // Pinned by the enclosing query, not by itself: a per-lead check on the words of a lead the
  // outer query already limits to one customer (leads.customer_id = ? or w.customer_id = ?, or
  // the walked window's leads.customer_id = ?).
  // Kept without customer_id because SQLite then picks the (customer_id, word) key and scans the
  // whole word range per lead (lead-search-store.ts). A router that cannot merge a correlated subquery
  // into the outer route (Vitess) needs `p.customer_id = <outer>.customer_id` added first.
  {
    sql: /\(SELECT 1 FROM lead_search_words p WHERE p\.lead_id = (leads\.id|w\.lead_id|walked\.id) AND p\.word >= \? AND p\.word < \? LIMIT 1\) IS NOT NULL/,
    why: 'search: the word check of a lead already pinned by the outer query',
  },
]

/** customer_id for every table that has it, id for customers, the parent's id for the owned tables. */
async function shardKeys(): Promise<ShardKeys> {
  const db = createDb(backends()[0]!.config().database)
  try {
    const tables = (await db.raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'`)) as Array<{name: string}>
    const keys = new Map<string, string>()
    for (const {name} of tables) {
      const columns = ((await db.raw(`SELECT name FROM pragma_table_info(?)`, [name])) as Array<{name: string}>).map((column) => column.name)
      if (name === 'customers') keys.set(name, 'id')
      else if (columns.includes('customer_id')) keys.set(name, 'customer_id')
      else if (OWNED_THROUGH_PARENT[name]) keys.set(name, OWNED_THROUGH_PARENT[name].column)
      else if (!(name in GLOBAL_TABLES)) throw new Error(`table ${name} is neither per-customer (customer_id) nor classified in shard-key.check.ts`)
    }
    return keys
  } finally {
    await db.destroy()
  }
}

describe('sharding discipline (after every test file)', function () {
  it('pins every statement on a customer\u2019s tables to one customer, or allowlists it with the reason', async function () {
    const file = process.env[SQL_RECORD_VARIABLE]!
    const statements = readRecording(file)
    // A recorder that is not installed must not pass for a clean run: every backend of the run sent something.
    expect([...new Set(statements.map((statement) => statement.dialect))].sort(), 'the backends whose statements were recorded').to.deep.equal(
      backends()
        .map((backend) => backend.name)
        .sort(),
    )
    const keys = await shardKeys()
    const used = new Set<Allowed>()
    const offending: string[] = []
    for (const statement of statements) {
      const unpinned = unpinnedTables(statement.sql, keys)
      if (unpinned.length === 0) continue
      const allowed = CROSS_CUSTOMER.find((entry) => entry.sql.test(statement.sql))
      if (allowed) used.add(allowed)
      else offending.push(`[${statement.dialect}] ${statement.sql}\n    ${unpinned.map((each) => `${each.table}: ${each.reason}`).join('; ')}`)
    }
    console.log(`      (${statements.length} distinct statements recorded)`)
    expect(offending, `statements that touch a customer's tables without customer_id:\n${offending.join('\n')}\n`).to.deep.equal([])
    // With both backends in the run, an entry no statement needs any more is stale.
    if (backends().length === 2) {
      const stale = CROSS_CUSTOMER.filter((entry) => !used.has(entry)).map((entry) => String(entry.sql))
      expect(stale, 'allowlist entries that no recorded statement needs (the check reads the whole suite\u2019s statements)').to.deep.equal([])
    }
  })
})
