import type {DatabaseConfig} from '../config/config.js'
import {AppError, ConfigError} from '../shared/errors.js'

/**
 * Why a database could not be reached, as one line with what to do: a missing MySQL database,
 * refused credentials, no server listening. The URL's password is never repeated.
 */
export function unreachableDatabaseError(error: unknown, database: DatabaseConfig): ConfigError {
  const {code, message} = error as {code?: string; message?: string}
  const url = database.client === 'mysql' ? new URL(database.url) : null
  const where = url ? `${url.hostname}:${url.port || '3306'}` : ''
  const name = url ? decodeURIComponent(url.pathname.slice(1)) : ''
  if (code === 'ER_BAD_DB_ERROR' && url) {
    return new ConfigError(
      'LEADS_DATABASE_URL',
      `names database "${name}", which does not exist on ${where}`,
      `create it (mysql -h ${url.hostname} -P ${url.port || '3306'} -u ${decodeURIComponent(url.username) || 'root'} -p -e 'CREATE DATABASE \`${name}\`'), then run \`leads migrate\``,
    )
  }
  if (code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_DBACCESS_DENIED_ERROR') {
    return new ConfigError(
      'LEADS_DATABASE_URL',
      `was refused by ${where}: wrong user or password, or no rights on "${name}"`,
      'check the user and password in LEADS_DATABASE_URL, and that the user has rights on the database',
    )
  }
  if (code === 'ECONNREFUSED' && url) {
    return new ConfigError(
      'LEADS_DATABASE_URL',
      `cannot be reached: nothing listens on ${where}`,
      'start MariaDB or MySQL there, or fix the host and port in the URL',
    )
  }
  // mysql2 messages can quote the user name but never the password; keep just the reason.
  return new ConfigError('LEADS_DATABASE_URL', `cannot be reached: ${code ?? message}`)
}

/** A statement that failed because a table is missing: the database was never migrated, or not to this version. */
export function missingTableError(error: unknown): AppError | null {
  const {code, message = ''} = error as {code?: string; message?: string}
  const table = code === 'ER_NO_SUCH_TABLE' ? /Table '(?:[^.']*\.)?([^']+)' doesn't exist/.exec(message)?.[1] : /no such table: (\S+)/.exec(message)?.[1]
  if (table === undefined) return null
  return new AppError('api_error', 500, `the database has no table ${table}: it is not migrated`, 'run `leads migrate` with the same LEADS_DATABASE_URL')
}
