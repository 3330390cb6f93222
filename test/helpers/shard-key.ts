/**
 * Reads a SQL statement the way a sharding router (Vitess, PlanetScale) would have to: which
 * per-customer tables it touches and whether each is pinned to one customer by its shard key.
 * A deliberately small reader for the SQL this project writes (knex's output and the stores'
 * own text), not a general SQL parser: what it cannot place it reports as unpinned, so a new
 * shape of statement fails the check until it is read correctly or allowlisted.
 */

/** The column that names the customer in each per-customer table (`id` in customers itself). */
export type ShardKeys = ReadonlyMap<string, string>

/** A per-customer table a statement touches without its shard key. */
export interface Unpinned {
  table: string
  reason: string
}

// Words that can follow a table name but are not its alias.
const NOT_ALIASES = new Set([
  'where',
  'set',
  'on',
  'join',
  'inner',
  'left',
  'right',
  'cross',
  'straight_join',
  'order',
  'group',
  'limit',
  'values',
  'select',
  'using',
  'for',
  'union',
  'having',
  'lock',
  'force',
  'use',
  'ignore',
  'natural',
  'as',
  'default',
  'window',
  'returning',
  'and',
  'or',
])

// The alias is read ahead, not consumed: in `from deliveries join events` the `join` that is not
// an alias still opens the next table reference.
const TABLE_REFERENCE = /\b(from|join|update|into)\s+([a-z_][a-z0-9_]*)(?=(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?)/g

/** The per-customer tables `sql` touches without pinning them to one customer; empty when it pins all. */
export function unpinnedTables(sql: string, keys: ShardKeys): Unpinned[] {
  const text = sql
    .toLowerCase()
    .replace(/[`"]/g, '')
    .replace(/^explain( query plan)?\s+/, '')
  return scopes(text).flatMap((scope) => unpinnedInScope(scope, keys))
}

/**
 * The statement and each subquery in it, every one with its subqueries replaced by `(…)`, and the
 * queries of a UNION apart: a predicate pins the tables of its own query level.
 */
function scopes(text: string): string[] {
  const found: string[] = []
  let rest = text
  for (;;) {
    const start = innermostSubquery(rest)
    if (start === -1) break
    const end = closingParenthesis(rest, start)
    found.push(rest.slice(start + 1, end))
    rest = `${rest.slice(0, start)}(…)${rest.slice(end + 1)}`
  }
  // Each query of a UNION pins its own tables.
  for (const part of [...found.splice(0), rest]) found.push(...part.split(/\bunion(?:\s+all)?\b/))
  return found
}

/** Where a `(select` with no other `(select` inside it opens, or -1. */
function innermostSubquery(text: string): number {
  const opening = /\(\s*(select|with)\b/g
  let last = -1
  for (let match = opening.exec(text); match; match = opening.exec(text)) {
    const end = closingParenthesis(text, match.index)
    if (!/\(\s*(select|with)\b/.test(text.slice(match.index + 1, end))) return match.index
    last = match.index
  }
  return last
}

function closingParenthesis(text: string, open: number): number {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++
    else if (text[i] === ')' && --depth === 0) return i
  }
  return text.length - 1
}

function unpinnedInScope(scope: string, keys: ShardKeys): Unpinned[] {
  const references = [...scope.matchAll(TABLE_REFERENCE)].map((match) => ({
    clause: match[1]!,
    table: match[2]!,
    alias: match[3] && !NOT_ALIASES.has(match[3]) ? match[3] : match[2]!,
    at: match.index,
  }))
  const keyed = references.filter((reference) => keys.has(reference.table) && reference.clause !== 'into')
  const pinned = pinnedAliases(
    scope,
    keyed.map((reference) => ({alias: reference.alias, key: keys.get(reference.table)!})),
  )
  const unpinned: Unpinned[] = []
  for (const reference of references) {
    const key = keys.get(reference.table)
    if (!key) continue
    if (reference.clause === 'into') {
      if (!insertedColumns(scope, reference.at).includes(key)) unpinned.push({table: reference.table, reason: `INSERT without ${key}`})
    } else if (!pinned.has(reference.alias)) unpinned.push({table: reference.table, reason: `no ${key} predicate in WHERE or ON`})
  }
  return unpinned
}

/**
 * The aliases whose key column a WHERE or ON clause fixes: compared by equality or IN to a value
 * (`customer_id = ?`), or equal to the key of a table that is itself fixed
 * (`w.customer_id = l.customer_id` with `l.customer_id = ?`), which keeps a join on one shard.
 * A key equal to a column of a table outside this query level (a correlated subquery) counts as
 * fixed: the enclosing level is checked on its own. An unqualified key column belongs to the
 * only keyed table of the level, when there is one.
 */
function pinnedAliases(scope: string, tables: ReadonlyArray<{alias: string; key: string}>): Set<string> {
  const conditions = scope.search(/\b(where|on)\b/)
  const pinned = new Set<string>()
  if (conditions === -1) return pinned
  const predicates = scope.slice(conditions)
  const value = String.raw`(?:\?|'[^']*'|\d+)`
  for (const {alias, key} of tables) {
    const column = `(?:\\b${escape(alias)}\\.${key}${tables.length === 1 ? `|(?<![.\\w])${key}` : ''})\\b`
    if (new RegExp(`${column}\\s*(?:(?:=|<=>)\\s*${value}|in\\s*\\()|${value}\\s*(?:=|<=>)\\s*${column}`).test(predicates)) pinned.add(alias)
  }
  const inLevel = new Map(tables.map((table) => [table.alias, table.key]))
  const links = [...predicates.matchAll(/\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\s*=\s*([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)/g)]
    .map(
      (match) =>
        [
          {alias: match[1]!, column: match[2]!},
          {alias: match[3]!, column: match[4]!},
        ] as const,
    )
    .filter(([a, b]) => [a, b].every((side) => !inLevel.has(side.alias) || inLevel.get(side.alias) === side.column))
  for (let grew = true; grew;) {
    grew = false
    for (const [a, b] of links) {
      for (const [from, to] of [
        [a, b],
        [b, a],
      ] as const) {
        const fixed = pinned.has(from.alias) || !inLevel.has(from.alias)
        if (fixed && inLevel.has(to.alias) && !pinned.has(to.alias)) {
          pinned.add(to.alias)
          grew = true
        }
      }
    }
  }
  return pinned
}

/** The column list of the INSERT whose table reference is at `at`. */
function insertedColumns(scope: string, at: number): string[] {
  const list = /^into\s+[a-z0-9_]+\s*\(([^)]*)\)/.exec(scope.slice(at))
  return list ? list[1]!.split(',').map((column) => column.trim()) : []
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
