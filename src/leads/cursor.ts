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

const SIGNATURE_BYTES = 16

/**
 * Encodes and checks the opaque keyset cursor. The payload is signed with a key derived from
 * the master key, so every daemon sharing the configuration accepts the others' cursors and a
 * client cannot forge a position; any change to a cursor makes it a 400, never a 500.
 */
export class CursorCodec {
  private readonly key: Buffer

  constructor(masterKey: Buffer) {
    this.key = createHmac('sha256', masterKey).update('leads-list-cursor-v1').digest()
  }

  encode(position: CursorPosition): string {
    const payload = Buffer.from(JSON.stringify({s: position.sortBy, d: position.sortDir, v: position.value, i: position.id})).toString('base64url')
    return `${payload}.${this.sign(payload).toString('base64url')}`
  }

  /** A change-feed position (sync=true), with the updated_since the feed was started with. */
  encodeChange(position: {seq: number; id: string; updatedSince: number | null}): string {
    const payload = Buffer.from(JSON.stringify({k: 'sync', q: position.seq, i: position.id, u: position.updatedSince})).toString('base64url')
    return `${payload}.${this.sign(payload).toString('base64url')}`
  }

  /** Decodes a change-feed cursor; a sort cursor, or anything edited, is a 400. */
  decodeChange(cursor: string): {seq: number; id: string; updatedSince: number | null} {
    const parsed = this.verifiedPayload(cursor)
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
    return {seq: q, id: i, updatedSince: u}
  }

  /** Decodes a cursor and checks it belongs to the requested sort; throws ValidationError otherwise. */
  decode(cursor: string, sortBy: SortField, sortDir: SortDirection): CursorPosition {
    const position = this.verify(cursor)
    if (position.sortBy !== sortBy || position.sortDir !== sortDir) {
      throw new ValidationError(
        `cursor was issued for sort_by=${position.sortBy}&sort_dir=${position.sortDir}; ` +
          `repeat those with it, or drop the cursor to start over with sort_by=${sortBy}&sort_dir=${sortDir}`,
        'cursor',
      )
    }
    return position
  }

  private verify(cursor: string): CursorPosition {
    const parsed = this.verifiedPayload(cursor)
    if (parsed['k'] === 'sync') {
      throw new ValidationError('cursor was issued for sync=true; repeat sync=true with it, or drop the cursor to start over', 'cursor')
    }
    const {s, d, v, i} = parsed
    const sortOk = (SORT_FIELDS as readonly unknown[]).includes(s) && (SORT_DIRECTIONS as readonly unknown[]).includes(d)
    const valueOk = (typeof v === 'number' && Number.isSafeInteger(v)) || (v === null && s === 'last_interaction_at')
    if (!sortOk || !valueOk || typeof i !== 'string' || !UUID_PATTERN.test(i)) throw invalidCursor()
    return {sortBy: s as SortField, sortDir: d as SortDirection, value: v as number | null, id: i}
  }

  /** The payload of a cursor this service signed; any other string is a 400. */
  private verifiedPayload(cursor: string): Record<string, unknown> {
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
    return parsed as Record<string, unknown>
  }

  private sign(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, SIGNATURE_BYTES)
  }
}

function invalidCursor(): ValidationError {
  return new ValidationError('cursor is not valid; pass next_cursor from an earlier response unchanged', 'cursor')
}
