import {type ApiKey, type KeyState, keyState} from '../../src/keys/key-types.js'
import {isoTime, isoTimeOrNull} from '../../src/shared/clock.js'
import type {Column} from '../../src/ui/render.js'

/** A key as every `leads keys` command prints it; never holds a token. */
export interface KeyOutput {
  id: string
  name: string | null
  customer_id: string
  scopes: string[]
  internal: boolean
  state: KeyState
  created_at: string
  last_used_at: string | null
  expires_at: string | null
}

export function keyOutput(key: ApiKey, now = Date.now()): KeyOutput {
  return {
    id: key.id,
    name: key.name,
    customer_id: key.customerId,
    scopes: key.scopes,
    internal: key.internal,
    state: keyState(key, now),
    created_at: isoTime(key.createdAt),
    last_used_at: isoTimeOrNull(key.lastUsedAt),
    expires_at: isoTimeOrNull(key.expiresAt),
  }
}

const STATE_COLORS: Record<KeyState, string> = {active: 'green', expired: 'yellow', revoked: 'red'}

export const KEY_COLUMNS: ReadonlyArray<Column<KeyOutput>> = [
  {header: 'ID', kind: 'id', value: (k) => k.id},
  {header: 'NAME', value: (k) => k.name ?? '-'},
  {header: 'CUSTOMER', kind: 'id', value: (k) => k.customer_id},
  {header: 'SCOPES', value: (k) => k.scopes.join(',') + (k.internal ? ' (internal)' : '')},
  {header: 'CREATED', kind: 'time', value: (k) => k.created_at},
  {header: 'LAST USED', kind: 'time', value: (k) => k.last_used_at ?? 'never'},
  {header: 'EXPIRES', kind: 'time', value: (k) => k.expires_at ?? 'never'},
  {header: 'STATE', kind: 'short', value: (k) => k.state, color: (k) => STATE_COLORS[k.state]},
]
