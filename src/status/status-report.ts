import {locateOperatorDatabase, requireKeptMasterKey} from '../config/database-location.js'
import type {ClientSettings} from '../client/client-settings.js'
import type {Config} from '../config/config.js'
import {createDb, type Db} from '../db/knex.js'
import {migrationStatus} from '../db/migrate.js'
import {describeRedis} from '../config/redis-config.js'
import {galeraCheck} from './galera-check.js'
import {connectRedis, variableOf} from '../db/redis.js'
import type {KeysStore} from '../keys/keys-store.js'
import {keyState} from '../keys/key-types.js'
import {hashToken} from '../keys/tokens.js'
import {safeMessage} from '../log/safe-error.js'
import {AppError} from '../shared/errors.js'
import {storeParts} from '../stores.js'
import {unreachableDatabaseError} from '../db/database-errors.js'

/** One line of `leads status`: ok, failing, or not configured (null). */
interface StatusCheck {
  check: 'database' | 'galera' | 'master key' | 'redis' | 'daemon' | 'client'
  ok: boolean | null
  summary: string
  hint?: string
  /** The same facts as fields, for --json. */
  details: Record<string, unknown>
}

export interface StatusReport {
  /** False when any configured part fails. */
  ok: boolean
  checks: StatusCheck[]
}

/** What the API said to the client's token, as fields. */
interface ApiDetails {
  reachable: boolean
  status: number | null
  accepts_token: boolean
  rate_limit: {limit: number; remaining: number; reset_seconds: number} | null
}

/** How long a check waits for an answer before it reports the part unreachable. */
const CHECK_TIMEOUT_MS = 2000

/**
 * What the operator commands and the client commands would use, checked: the database (where,
 * reachable, migrations; on a Galera cluster the nodes the daemons write through), the master key, Redis, the daemon's /readyz, and for the client
 * settings which key the token is, its customer, scopes and rate-limit state. Never prints a
 * secret: a token is named by its key, a URL without its password.
 */
export async function statusReport(config: Config, cwd: string, client: ClientSettings): Promise<StatusReport> {
  const database = await databaseCheck(config, cwd)
  try {
    // The stores alone: createServices would migrate the embedded database, require the master key
    // and connect Redis, all of which status reports on rather than needs.
    const keys = database.db && (await storeParts(database.db)('keys'))
    const galera = await galeraCheck(database.db)
    const checks = [
      database.check,
      ...(galera ? [galera] : []),
      masterKeyCheck(database.config ?? config),
      await redisCheck(config),
      await daemonCheck(config, client),
      await clientCheck(config, client, keys),
    ]
    return {ok: checks.every((check) => check.ok !== false), checks}
  } finally {
    await database.db?.destroy()
  }
}

/** The database check, and the open database when it answered (the client check looks the token up in it). */
async function databaseCheck(config: Config, cwd: string): Promise<{check: StatusCheck; config?: Config; db?: Db}> {
  let located: Config
  try {
    located = locateOperatorDatabase(config, cwd)
  } catch (error) {
    return {check: failed('database', error, {reachable: false})}
  }
  const location = located.database.client === 'sqlite' ? located.database.filename : withoutCredentials(located.database.url)
  const where = `${located.database.client} ${location}`
  const details = {client: located.database.client, location}
  const db = createDb(located.database)
  try {
    const migrations = await migrationStatus(db)
    const pending = migrations.filter((migration) => !migration.applied).length
    const summary = `${where}: reachable, ${migrations.length - pending} migrations applied, ${pending} pending`
    const counts = {...details, reachable: true, migrations_applied: migrations.length - pending, migrations_pending: pending}
    const check: StatusCheck =
      pending === 0
        ? {check: 'database', ok: true, summary, details: counts}
        : {check: 'database', ok: false, summary, hint: 'run `leads migrate`', details: counts}
    return {check, config: located, db}
  } catch (error) {
    await db.destroy()
    return {
      check: {
        check: 'database',
        ok: false,
        summary: `${where}: unreachable (${safeMessage(error)})`,
        hint: databaseHint(error, located.database),
        details: {...details, reachable: false},
      },
      config: located,
    }
  }
}

/** The hint every other command gives for a missing MySQL database, a refused login or no server; else whether it runs. */
function databaseHint(error: unknown, database: Config['database']): string {
  const explained = EXPLAINED_CODES.has((error as {code?: string}).code ?? '') ? unreachableDatabaseError(error, database).hint : undefined
  return explained ?? 'is the database running? LEADS_DATABASE_URL names it'
}

const EXPLAINED_CODES = new Set(['ER_BAD_DB_ERROR', 'ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ECONNREFUSED'])

function masterKeyCheck(config: Config): StatusCheck {
  if (config.masterKey) return {check: 'master key', ok: true, summary: 'from LEADS_MASTER_KEY', details: {source: 'LEADS_MASTER_KEY'}}
  try {
    requireKeptMasterKey(config)
    return {check: 'master key', ok: true, summary: `kept beside the database in ${config.dataDir}`, details: {source: 'file', directory: config.dataDir}}
  } catch (error) {
    return failed('master key', error, {source: null})
  }
}

async function redisCheck(config: Config): Promise<StatusCheck> {
  if (!config.redis) {
    return {check: 'redis', ok: null, summary: 'not configured: dispatch and rate limits in-process (one daemon)', details: {configured: false}}
  }
  const where = describeRedis(config.redis)
  const details = {configured: true, mode: config.redis.mode, location: where}
  try {
    const redis = await connectRedis(config.redis)
    await redis.close().catch(() => undefined)
    return {check: 'redis', ok: true, summary: `${where}: reachable`, details: {...details, reachable: true}}
  } catch (error) {
    return {
      check: 'redis',
      ok: false,
      summary: `${where}: unreachable (${safeMessage(error)})`,
      hint: `is Redis running? ${variableOf(config.redis)} names it`,
      details: {...details, reachable: false},
    }
  }
}

async function daemonCheck(config: Config, client: ClientSettings): Promise<StatusCheck> {
  const base = daemonUrl(config, client)
  try {
    const response = await fetch(`${base}/readyz`, {signal: AbortSignal.timeout(CHECK_TIMEOUT_MS)})
    if (response.ok) return {check: 'daemon', ok: true, summary: `${base}: ready`, details: {url: base, reachable: true, ready: true, reasons: []}}
    const reasons = ((await response.json().catch(() => ({}))) as {reasons?: string[]}).reasons ?? []
    return {
      check: 'daemon',
      ok: false,
      summary: `${base}: not ready (${reasons.join('; ') || `HTTP ${response.status}`})`,
      details: {url: base, reachable: true, ready: false, reasons},
    }
  } catch (error) {
    return {
      check: 'daemon',
      ok: false,
      summary: `${base}: not reachable (${safeMessage((error as {cause?: unknown}).cause ?? error)})`,
      hint: 'start it with `leads daemon` (npm start), or set LEADS_BASE_URL to where it runs',
      details: {url: base, reachable: false, ready: false, reasons: []},
    }
  }
}

async function clientCheck(config: Config, client: ClientSettings, keys: KeysStore | undefined): Promise<StatusCheck> {
  const {baseUrl, apiToken, customerId} = client
  if (!apiToken) {
    return {
      check: 'client',
      ok: null,
      summary: 'no API token (--token, LEADS_API_TOKEN or a profile): pull and push are not configured',
      details: {configured: false},
    }
  }
  const parts: string[] = [`customer ${customerId ?? '(none given)'}`]
  let ok = customerId !== null
  const grant = keys ? await keys.findByTokenHash(hashToken(apiToken)).catch(() => null) : null
  if (grant) {
    const {key} = grant
    parts.push(
      `key ${key.id}${key.name ? ` "${key.name}"` : ''}, ${keyState(key, Date.now())}, scopes ${key.scopes.join(' ')}${key.internal ? ' (internal)' : ''}`,
    )
    if (customerId !== null && key.customerId !== customerId.toLowerCase()) {
      parts.push(`locked to customer ${key.customerId}`)
      ok = false
    }
  } else if (keys) {
    parts.push('the token is not a key of this database')
  }
  const api = await apiProbe(baseUrl ?? daemonUrl(config, client), apiToken, customerId)
  parts.push(api.summary)
  const key = grant && {
    id: grant.key.id,
    name: grant.key.name,
    customer_id: grant.key.customerId,
    state: keyState(grant.key, Date.now()),
    scopes: grant.key.scopes,
    internal: grant.key.internal,
  }
  const details = {configured: true, base_url: baseUrl ?? daemonUrl(config, client), customer_id: customerId, key, api: api.details}
  return {check: 'client', ok: ok && api.ok, summary: parts.join('; '), ...(api.ok ? {} : {hint: api.hint}), details}
}

/** One cheap request as the client: what the API says of the token, and its rate-limit budget. */
async function apiProbe(base: string, token: string, customerId: string | null): Promise<{ok: boolean; summary: string; hint?: string; details: ApiDetails}> {
  try {
    const response = await fetch(`${base}/api/agents/crm/leads?limit=1`, {
      headers: {authorization: `Bearer ${token}`, 'x-customer-id': customerId ?? ''},
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    })
    const remaining = response.headers.get('ratelimit-remaining')
    const limit = response.headers.get('ratelimit-limit')
    const budget = remaining === null ? '' : `, rate limit ${remaining}/${limit} left (resets in ${response.headers.get('ratelimit-reset')} s)`
    const rateLimit =
      remaining === null ? null : {limit: Number(limit), remaining: Number(remaining), reset_seconds: Number(response.headers.get('ratelimit-reset'))}
    const details = (acceptsToken: boolean): ApiDetails => ({reachable: true, status: response.status, accepts_token: acceptsToken, rate_limit: rateLimit})
    if (response.ok) return {ok: true, summary: `API at ${base} accepts the token${budget}`, details: details(true)}
    const message = ((await response.json().catch(() => ({}))) as {error?: {message?: string}}).error?.message ?? ''
    // 403 for a key without the read scope still proves the token and the customer.
    if (response.status === 403 && /lacks the scope/.test(message))
      return {ok: true, summary: `API at ${base} accepts the token (it cannot read leads)${budget}`, details: details(true)}
    return {
      ok: false,
      summary: `API at ${base} answers ${response.status}: ${message}${budget}`,
      hint: 'check LEADS_API_TOKEN and LEADS_CUSTOMER_ID with the operator',
      details: details(false),
    }
  } catch (error) {
    return {
      ok: false,
      summary: `API at ${base} not reachable (${safeMessage((error as {cause?: unknown}).cause ?? error)})`,
      hint: 'is the daemon running? LEADS_BASE_URL names it',
      details: {reachable: false, status: null, accepts_token: false, rate_limit: null},
    }
  }
}

/** Where the daemon answers: the client's base URL, else the address it listens on here. */
function daemonUrl(config: Config, client: ClientSettings): string {
  if (client.baseUrl) return client.baseUrl
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  return parsed.toString()
}

function failed(check: StatusCheck['check'], error: unknown, details: Record<string, unknown>): StatusCheck {
  if (error instanceof AppError) return {check, ok: false, summary: error.message, ...(error.hint ? {hint: error.hint} : {}), details}
  return {check, ok: false, summary: safeMessage(error), details}
}
