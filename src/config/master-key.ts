import {randomBytes} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

import type {Config} from './config.js'
import {parseMasterKey} from './config.js'

export const MASTER_KEY_FILE = 'master.key'

/**
 * The configured master key, or on the embedded default the one kept in the data directory,
 * generated (mode 0600) on first use. MySQL deployments must configure it (loadConfig enforces
 * that) because several hosts have to share it.
 */
export function resolveMasterKey(config: Config): Buffer {
  if (config.masterKey) return config.masterKey
  const file = path.join(config.dataDir, MASTER_KEY_FILE)
  if (fs.existsSync(file)) return readKeptKey(file)
  fs.mkdirSync(config.dataDir, {recursive: true})
  const key = randomBytes(32)
  // 'wx' fails if another process created the file first; then its key is the one to use.
  try {
    fs.writeFileSync(file, key.toString('hex') + '\n', {mode: 0o600, flag: 'wx'})
    return key
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return readKeptKey(file)
  }
}

/** The kept key, its file made owner-only when found looser (copied back from a backup, say), as the store's files are. */
function readKeptKey(file: string): Buffer {
  const key = parseMasterKey(fs.readFileSync(file, 'utf8').trim(), file) as Buffer
  try {
    if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600)
  } catch {
    // A key mounted read-only (a container secret) is not ours to change; it is used as it is.
  }
  return key
}
