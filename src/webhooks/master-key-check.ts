import {hkdfSync} from 'node:crypto'

import type {Db} from '../db/knex.js'
import {AppError} from '../shared/errors.js'

/** The one row of master_key_check. */
const ROW_ID = 1

/**
 * The fingerprint of a master key: a key derived from it for this purpose alone (HKDF, as
 * SecretBox derives its own), so the stored value tells nothing of the key or of the others.
 */
export function masterKeyFingerprint(masterKey: Buffer): string {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'leads-master-key-check-v1', 32)).toString('hex')
}

/**
 * Which master key a database's webhook secrets are sealed with, kept as its fingerprint: a
 * daemon or a command that seals or opens secrets under another key would seal secrets no daemon
 * can open (a webhook's deliveries then fail until it is rotated again), so it refuses instead.
 */
export class MasterKeyCheck {
  constructor(private readonly db: Db) {}

  /** Adopts the key when the database has none yet; throws when it has another. */
  async verify(masterKey: Buffer, now: number): Promise<void> {
    const fingerprint = masterKeyFingerprint(masterKey)
    await this.db('master_key_check').insert({id: ROW_ID, fingerprint, adopted_at: now}).onConflict('id').ignore()
    const row = (await this.db('master_key_check').where({id: ROW_ID}).first('fingerprint')) as {fingerprint: string} | undefined
    if (row?.fingerprint === fingerprint) return
    throw new AppError(
      'invalid_request_error',
      400,
      "LEADS_MASTER_KEY is not the key this database's webhook secrets are sealed with",
      'use the key the daemons run with; if that key is lost, `leads maintenance adopt-master-key --yes`, then rotate every webhook secret (docs/operations.md)',
    )
  }

  /** Makes `masterKey` the database's key from now on (the one it had is lost). */
  async adopt(masterKey: Buffer, now: number): Promise<void> {
    await this.db('master_key_check')
      .insert({id: ROW_ID, fingerprint: masterKeyFingerprint(masterKey), adopted_at: now})
      .onConflict('id')
      .merge(['fingerprint', 'adopted_at'])
  }
}
