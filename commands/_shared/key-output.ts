import {type ApiKey, type KeyState, keyState} from '../../src/keys/key-types.js'
import {isoTime, isoTimeOrNull} from '../../src/shared/clock.js'
import type {Column} from '../../src/ui/render.js'
import {commonStart} from '../../src/ui/table-layout.js'

/**
 * A key's state as `leads keys` prints it, in a table and in --json alike: `rotating` is an
 * active key whose previous token still works after a rotation with --grace.
 */
export type KeyOutputState = KeyState | 'rotating'

/** A key as every `leads keys` command prints it; never holds a token. */
export interface KeyOutput {
  id: string
  name: string | null
  customer_id: string
  scopes: string[]
  internal: boolean
  state: KeyOutputState
  created_at: string
  last_used_at: string | null
  expires_at: string | null
  /** While the key's previous token still works after a rotation with --grace: when it stops. */
  previous_token_retires_at: string | null
}

export function keyOutput(key: ApiKey & {previousTokensRetireAt?: number | null}, now = Date.now()): KeyOutput {
  const retiresAt = key.previousTokensRetireAt ?? null
  const previousTokenRetiresAt = retiresAt !== null && retiresAt > now ? isoTime(retiresAt) : null
  const state = keyState(key, now)
  return {
    id: key.id,
    name: key.name,
    customer_id: key.customerId,
    scopes: key.scopes,
    internal: key.internal,
    state: state === 'active' && previousTokenRetiresAt !== null ? 'rotating' : state,
    created_at: isoTime(key.createdAt),
    last_used_at: isoTimeOrNull(key.lastUsedAt),
    expires_at: isoTimeOrNull(key.expiresAt),
    previous_token_retires_at: previousTokenRetiresAt,
  }
}

const STATE_COLORS: Record<KeyOutputState, string> = {active: 'green', rotating: 'cyan', expired: 'yellow', revoked: 'red'}

/**
 * The columns of `leads keys list`, ranked for a narrow terminal: id, state and scopes first,
 * whole. Without the customer column when every key is one customer's (--customer).
 */
export function keyColumns(options: {oneCustomer: boolean}): Array<Column<KeyOutput>> {
  const columns: Array<Column<KeyOutput> | null> = [
    {header: 'ID', kind: 'id', rank: 0, value: (k) => k.id},
    {header: 'STATE', kind: 'short', rank: 1, value: (k) => k.state, color: (k) => STATE_COLORS[k.state]},
    {header: 'SCOPES', kind: 'short', rank: 2, value: (k) => k.scopes.join(','), shorten: shortenScopes},
    {header: 'NAME', rank: 4, value: (k) => k.name ?? '-'},
    options.oneCustomer ? null : {header: 'CUSTOMER', kind: 'id', rank: 3, value: (k) => k.customer_id},
    {header: 'INTERNAL', kind: 'short', rank: 5, value: (k) => (k.internal ? 'yes' : 'no')},
    {header: 'OLD TOKEN UNTIL', kind: 'time', rank: 6, value: (k) => k.previous_token_retires_at ?? '-'},
    {header: 'EXPIRES', kind: 'time', rank: 7, value: (k) => k.expires_at ?? 'never'},
    {header: 'LAST USED', kind: 'time', rank: 8, value: (k) => k.last_used_at ?? 'never'},
    {header: 'CREATED', kind: 'time', rank: 9, value: (k) => k.created_at},
  ]
  return columns.filter((column) => column !== null)
}

/**
 * Scopes for a terminal: without the start every scope's resource shares (`public_api:`), and
 * the actions on one resource together (`leads:read+write`), so a key with every scope still fits
 * 80 columns; the note below the table says what was done.
 */
function shortenScopes(values: readonly string[]): {values: string[]; note: string} | null {
  const lists = values.map((value) => value.split(',').filter(Boolean))
  const start = commonStart(
    lists.flat().map((scope) => scope.slice(0, scope.lastIndexOf(':'))),
    ':',
  )
  const shortened = lists.map((scopes) => groupActions(scopes.map((scope) => scope.slice(start.length))))
  const grouped = shortened.some((value) => value.includes('+'))
  if (start === '' && !grouped) return null
  const notes = [start === '' ? null : `${start} left out (common to all)`, grouped ? 'a+b: both actions on one resource' : null]
  return {values: shortened, note: `SCOPES: ${notes.filter(Boolean).join('; ')}`}
}

/** `leads:read`, `leads:write` → `leads:read+write`. */
function groupActions(scopes: readonly string[]): string {
  const groups = new Map<string, string[]>()
  for (const scope of scopes) {
    const split = scope.lastIndexOf(':') + 1
    groups.set(scope.slice(0, split), [...(groups.get(scope.slice(0, split)) ?? []), scope.slice(split)])
  }
  return [...groups].map(([resource, actions]) => resource + actions.join('+')).join(',')
}
