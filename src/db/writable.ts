import {ConfigError} from '../shared/errors.js'
import {type Db, isMysql} from './knex.js'

/**
 * On MySQL, why the server is not one the service may write to, or null when it is: `read_only`
 * or `innodb_read_only` ON (how a replica is usually configured; a user with READ_ONLY ADMIN or
 * SUPER, root among them, would still write past `read_only`), or replication threads applying
 * another server's changes (`Slaves_running`, MariaDB's status, readable without privileges).
 * Writes to a replica diverge from its primary and are lost when it is rebuilt; and the change
 * feed numbers pending leads as it reads (docs/design.md), so even `GET /leads` writes.
 */
export async function notWritableReason(db: Db): Promise<string | null> {
  if (!isMysql(db)) return null
  const [variables] = (await db.raw(`SELECT @@global.read_only AS read_only, @@global.innodb_read_only AS innodb_read_only`)) as [
    Array<{read_only: number | string; innodb_read_only: number | string}>,
  ]
  const on = (value: number | string | undefined) => value === 1 || value === '1' || value === 'ON'
  if (on(variables[0]?.innodb_read_only)) return 'innodb_read_only is ON'
  if (on(variables[0]?.read_only)) return 'read_only is ON'
  const [status] = (await db.raw(`SHOW GLOBAL STATUS LIKE 'Slaves_running'`)) as [Array<{Value: string}>]
  const running = Number(status[0]?.Value ?? 0)
  if (running > 0) return `it replicates from another server: Slaves_running is ${running}`
  return null
}

/** Refuses, as a ConfigError naming LEADS_DATABASE_URL, a server notWritableReason finds a reason against. */
export async function requireWritableServer(db: Db): Promise<void> {
  const reason = await notWritableReason(db)
  if (!reason) return
  throw new ConfigError(
    'LEADS_DATABASE_URL',
    `points at a server that is a read replica or read-only (${reason}), so the service does not write to it`,
    'point it at the primary (or the balancer in front of the writer node); reading from a replica is not supported (docs/operations.md, "Read replicas")',
  )
}
