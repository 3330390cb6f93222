import fs from 'node:fs'
import path from 'node:path'

import {AppError} from '../shared/errors.js'
import type {Config} from './config.js'
import {MASTER_KEY_FILE} from './master-key.js'

/** The embedded default's place below a directory, as `npm start` (the daemon) creates it. */
const EMBEDDED_DATABASE = path.join('.leads', 'leads.db')

const POINT_ELSEWHERE = 'set LEADS_DATABASE_URL (sqlite:///path/to/leads.db or mysql://…) to use another database'

/**
 * The configuration an operator command runs with. Operator commands never create a database:
 * on the embedded default they look for `.leads/leads.db` in the working directory and in each
 * directory above it (so a command run in a subdirectory of the checkout finds the database the
 * daemon made at its top), and a SQLite file named in LEADS_DATABASE_URL must exist. Without
 * LEADS_MASTER_KEY the key is the one kept beside the database. Throws one line saying where it
 * looked and how to point the command elsewhere.
 */
export function locateOperatorDatabase(config: Config, cwd: string): Config {
  const {database} = config
  if (database.client !== 'sqlite' || database.filename === ':memory:') return config
  if (!config.databaseDefaulted) {
    if (!fs.existsSync(database.filename)) {
      throw new AppError(
        'invalid_request_error',
        400,
        `no database at ${database.filename} (LEADS_DATABASE_URL)`,
        'start the daemon once with this setting to create it, or fix the path',
      )
    }
    return config
  }
  const found = findEmbeddedDatabase(config, cwd)
  if (found) return found
  throw new AppError(
    'invalid_request_error',
    400,
    `no leads database found: looked for ${EMBEDDED_DATABASE} in ${path.resolve(cwd)} and every directory above it`,
    `run the command where the daemon runs (npm start creates the database there), or ${POINT_ELSEWHERE}`,
  )
}

/**
 * On the embedded default, the configuration pointed at the nearest `.leads/leads.db` in `cwd` or
 * a directory above it; null when there is none (or the database is configured explicitly).
 */
export function findEmbeddedDatabase(config: Config, cwd: string): Config | null {
  const {database} = config
  if (!config.databaseDefaulted || database.client !== 'sqlite') return null
  for (let directory = path.resolve(cwd); ; directory = path.dirname(directory)) {
    const filename = path.join(directory, EMBEDDED_DATABASE)
    if (fs.existsSync(filename)) return {...config, database: {...database, filename}, dataDir: path.dirname(filename)}
    if (path.dirname(directory) === directory) return null
  }
}

/** The master key file an operator command reads on the embedded default; it is never generated here. */
export function requireKeptMasterKey(config: Config): void {
  if (config.masterKey || config.database.client !== 'sqlite') return
  const file = path.join(config.dataDir, MASTER_KEY_FILE)
  if (!fs.existsSync(file)) {
    throw new AppError(
      'invalid_request_error',
      400,
      `no master key at ${file} beside the database`,
      'set LEADS_MASTER_KEY to the key the daemon uses, or start the daemon once to create it',
    )
  }
}
