import {createHmac, timingSafeEqual} from 'node:crypto'

import {ValidationError} from '../shared/errors.js'
import {UUID_PATTERN} from '../shared/validate.js'

export const SORT_FIELDS = ['created_at', 'updated_at', 'last_interaction_at'] as const
export type SortField = (typeof SORT_FIELDS)[number]
export const SORT_DIRECTIONS = ['asc', 'desc'] as const
export type SortDirection = (typeof SORT_DIRECTIONS)[number]

/** A position in one sort order: the last row's sort value (null only for last_interaction_at) and id. */
export interface CursorPosition {
  sortBy: SortField
  sortDir: SortDirection
  value: number | null
  id: string
}

/** A decoded position; `unbound` when the cursor predates customer binding and names no customer. */
export type DecodedPosition<P> = P & {unbound?: true}

const SIGNATURE_BYTES = 16

/**
 * Encodes and checks the opaque keyset cursor. The payload is signed with a key derived from
 * the master key, so every daemon sharing the configuration accepts the others' cursors and a
 * client cannot forge a position; any change to a cursor makes it a 400, never a 500. A cursor
 * names the customer it was issued for: another customer's is a 400, since it would page (or
 * sync) from a position in someone else's leads and silently skip rows of one's own. Cursors
 * signed before that carry no customer and are decoded as `unbound` (the caller checks them).
 */
export class CursorCodec {
  private readonly key: Buffer

  constructor(masterKey: Buffer) {
    this.key = createHmac('sha256', masterKey).update('leads-list-cursor-v1').digest()
  }

  encode(position: CursorPosition, customerId: string): string {
    const payload = Buffer.from(JSON.stringify({s: position.sortBy, d: position.sortDir, v: position.value, i: position.id, c: customerId})).toString(
      'base64url',
    )
    return `${payload}.${this.sign(payload).toString('base64url')}`
  }

  /** A change-feed position (sync=true), with the updated_since the feed was started with. */
  encodeChange(position: ChangeCursor, customerId: string): string {
    const payload = Buffer.from(JSON.stringify({k: 'sync', q: position.seq, i: position.id, u: position.updatedSince, c: customerId})).toString('base64url')
    return `${payload}.${this.sign(payload).toString('base64url')}`
  }

  /** Decodes a change-feed cursor; a sort cursor, or anything edited, is a 400. */
  decodeChange(cursor: string, customerId: string): DecodedPosition<ChangeCursor> {
    const parsed = this.verifiedPayload(cursor, customerId)
    if (parsed['k'] !== 'sync') {
      throw new ValidationError('cursor was issued for a sorted list, not for sync=true; drop sync=true, or drop the cursor to start the feed over', 'cursor')
    }
    const {q, i, u} = parsed
    if (
      typeof q !== 'number' ||
      !Number.isSafeInteger(q) ||
      q < 0 ||
      typeof i !== 'string' ||
      !UUID_PATTERN.test(i) ||
      !(u === null || (typeof u === 'number' && Number.isSafeInteger(u)))
    ) {
      throw invalidCursor()
    }
    return {seq: q, id: i, updatedSince: u, ...unbound(parsed)}
  }

  /**
   * A position in the operator's delivery list (`leads deliveries list`, newest first), bound to
   * the filters it was issued for (`scope`) as an API cursor is bound to its customer.
   */
  encodeDeliveries(position: DeliveryListPosition, scope: string): string {
    const payload = Buffer.from(JSON.stringify({k: 'deliveries', v: position.createdAt, i: position.id, c: scope})).toString('base64url')
    return `${payload}.${this.sign(payload).toString('base64url')}`
  }

  /** Decodes a delivery-list cursor issued for `scope`; any other cursor, or anything edited, is a ValidationError naming `cursor`. */
  decodeDeliveries(cursor: string, scope: string): DeliveryListPosition {
    const parsed = this.verifiedPayload(cursor, scope, otherFilters)
    const {k, v, i} = parsed
    if (k !== 'deliveries' || typeof v !== 'number' || !Number.isSafeInteger(v) || typeof i !== 'string' || !UUID_PATTERN.test(i)) throw invalidCursor()
    return {createdAt: v, id: i}
  }

  /** Decodes a cursor and checks it belongs to the requested sort; throws ValidationError otherwise. */
  decode(cursor: string, sortBy: SortField, sortDir: SortDirection, customerId: string): DecodedPosition<CursorPosition> {
    const position = this.verify(cursor, customerId)
    if (position.sortBy !== sortBy || position.sortDir !== sortDir) {
      throw new ValidationError(
        `cursor was issued for sort_by=${position.sortBy}&sort_dir=${position.sortDir}; ` +
          `repeat those with it, or drop the cursor to start over with sort_by=${sortBy}&sort_dir=${sortDir}`,
        'cursor',
      )
    }
    return position
  }

  private verify(cursor: string, customerId: string): DecodedPosition<CursorPosition> {
    const parsed = this.verifiedPayload(cursor, customerId)
    if (parsed['k'] === 'sync') {
      throw new ValidationError('cursor was issued for sync=true; repeat sync=true with it, or drop the cursor to start over', 'cursor')
    }
    const {s, d, v, i} = parsed
    const sortOk = (SORT_FIELDS as readonly unknown[]).includes(s) && (SORT_DIRECTIONS as readonly unknown[]).includes(d)
    const valueOk = (typeof v === 'number' && Number.isSafeInteger(v)) || (v === null && s === 'last_interaction_at')
    if (!sortOk || !valueOk || typeof i !== 'string' || !UUID_PATTERN.test(i)) throw invalidCursor()
    return {sortBy: s as SortField, sortDir: d as SortDirection, value: v as number | null, id: i, ...unbound(parsed)}
  }

  /** The payload of a cursor this service signed for the customer (or for no customer); any other string is a 400. */
  private verifiedPayload(cursor: string, customerId: string, foreign: () => ValidationError = foreignCursor): Record<string, unknown> {
    const [payload, signature, ...rest] = cursor.split('.')
    if (!payload || !signature || rest.length > 0) throw invalidCursor()
    const given = Buffer.from(signature, 'base64url')
    if (given.length !== SIGNATURE_BYTES || !timingSafeEqual(given, this.sign(payload))) throw invalidCursor()
    let parsed: unknown
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      throw invalidCursor()
    }
    if (parsed === null || typeof parsed !== 'object') throw invalidCursor()
    const issuedFor = (parsed as Record<string, unknown>)['c']
    if (issuedFor !== undefined && issuedFor !== customerId) throw foreign()
    return parsed as Record<string, unknown>
  }

  private sign(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, SIGNATURE_BYTES)
  }
}

/** A change-feed position (sync=true), with the updated_since the feed was started with. */
export interface ChangeCursor {
  seq: number
  id: string
  updatedSince: number | null
}

/** Where the operator's delivery list stopped: the last delivery shown (the list is newest first, by created_at then id). */
export interface DeliveryListPosition {
  createdAt: number
  id: string
}

function otherFilters(): ValidationError {
  return new ValidationError(
    'cursor was issued for other --webhook/--status filters; repeat those with it, or drop --cursor to start over from the newest',
    'cursor',
  )
}

/** The 400 for a cursor issued for another customer than the caller's. */
export function foreignCursor(): ValidationError {
  return new ValidationError(
    'cursor was not issued for this customer; a cursor works only for the customer it was issued for. Drop the cursor to start over',
    'cursor',
  )
}

function unbound(payload: Record<string, unknown>): {unbound?: true} {
  return payload['c'] === undefined ? {unbound: true} : {}
}

function invalidCursor(): ValidationError {
  return new ValidationError('cursor is not valid; pass next_cursor from an earlier response unchanged', 'cursor')
}
