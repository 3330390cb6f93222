import path from 'node:path'

import {ConfigError} from '../shared/errors.js'
import {withoutCredentials} from '../shared/text.js'
import {TrustedProxies} from '../shared/trusted-proxies.js'
import {parseRedisConfig, type RedisConfig} from './redis-config.js'

export type DatabaseConfig = {readonly client: 'sqlite'; readonly filename: string; readonly url: string} | {readonly client: 'mysql'; readonly url: string}

export interface Config {
  readonly database: DatabaseConfig
  /** True when LEADS_DATABASE_URL was not set: the embedded default, which operator commands look for (database-location.ts). */
  readonly databaseDefaulted: boolean
  /** Redis (one server, a cluster or a Sentinel master) for dispatch and shared counters; null runs the in-process adapters. */
  readonly redis: RedisConfig | null
  readonly host: string
  readonly port: number
  /** Raw 32-byte master key when configured; embedded mode may generate one (see master-key.ts). */
  readonly masterKey: Buffer | null
  /** Directory for embedded-mode files (SQLite database, generated master key). */
  readonly dataDir: string
  readonly webhookAllowHosts: readonly string[]
  /** Load balancers whose X-Forwarded-For is believed (addresses and CIDRs; see trusted-proxies.ts). */
  readonly trustedProxies: readonly string[]
  readonly metricsEnabled: boolean
  /** Whether a group of creates is first written as new people in one round trip (create-guess.ts). */
  readonly createGuess: boolean
  /** Whether a bulk write is first planned, while its reads are out, as all new people (bulk-guess.ts). */
  readonly bulkGuess: boolean
  /** The time limit of each list and search statement, in ms; past it the request is a 400 saying how to narrow it. */
  readonly statementTimeoutMs: number
  readonly logLevel: string
  /** Settings of the client commands (`leads pull`, `leads push`). */
  readonly client: {
    readonly baseUrl: string | null
    readonly apiToken: string | null
    readonly customerId: string | null
    /** The profile of client settings to use (`leads config`), over the one `leads config use` chose. */
    readonly profile: string | null
  }
}

const DEFAULT_DATABASE_URL = 'sqlite://./.leads/leads.db'

/** Every environment variable loadConfig reads; the compose file and docs are checked against it. */
export const CONFIG_VARIABLES = [
  'LEADS_DATABASE_URL',
  'LEADS_REDIS_URL',
  'LEADS_REDIS_CLUSTER_NODES',
  'LEADS_REDIS_SENTINELS',
  'LEADS_REDIS_SENTINEL_MASTER',
  'LEADS_HOST',
  'LEADS_PORT',
  'LEADS_MASTER_KEY',
  'LEADS_WEBHOOK_ALLOW_HOSTS',
  'LEADS_TRUSTED_PROXIES',
  'LEADS_METRICS',
  'LEADS_CREATE_GUESS',
  'LEADS_BULK_GUESS',
  'LEADS_STATEMENT_TIMEOUT_MS',
  'LEADS_LOG_LEVEL',
  'LEADS_BASE_URL',
  'LEADS_API_TOKEN',
  'LEADS_CUSTOMER_ID',
  'LEADS_PROFILE',
] as const
/** The default time limit of a list or search statement: the API's bar is no list or search request over 2 s. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 2000
const STATEMENT_TIMEOUT_MIN_MS = 1
const STATEMENT_TIMEOUT_MAX_MS = 600_000
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** What each variable means, one line each: the root help's ENVIRONMENT section. */
export const CONFIG_VARIABLE_HELP: Record<(typeof CONFIG_VARIABLES)[number], string> = {
  LEADS_DATABASE_URL: `database: sqlite://./path.db or mysql://user:pass@host:3306/db (default ${DEFAULT_DATABASE_URL}, which operator commands look for upwards from here)`,
  LEADS_REDIS_URL: 'redis://host:6379/0: dispatch and shared rate-limit counters for several daemons (default: in-process)',
  LEADS_REDIS_CLUSTER_NODES: 'host:port,host:port (or redis[s]://user:pass@host:port,...): seed nodes of a Redis Cluster, instead of LEADS_REDIS_URL',
  LEADS_REDIS_SENTINELS: 'host:port,host:port (or redis[s]://user:pass@host:port,...): Redis Sentinels to find the master through, instead of LEADS_REDIS_URL',
  LEADS_REDIS_SENTINEL_MASTER: 'the master name the sentinels monitor (e.g. mymaster); required with LEADS_REDIS_SENTINELS',
  LEADS_HOST: 'address the daemon listens on (default 127.0.0.1)',
  LEADS_PORT: 'port the daemon listens on (default 8080)',
  LEADS_MASTER_KEY: '32 bytes, hex or base64: encrypts webhook secrets, signs cursors; required with MySQL',
  LEADS_WEBHOOK_ALLOW_HOSTS: 'host[:port],... exempt from the private-address block (development and tests only)',
  LEADS_TRUSTED_PROXIES: 'address[/prefix],... of load balancers whose X-Forwarded-For gives the client address (default: none)',
  LEADS_METRICS: '1 serves Prometheus metrics at GET /metrics',
  LEADS_CREATE_GUESS: 'on or off: write a group of creates as new people in one round trip, checked by the database (default on)',
  LEADS_BULK_GUESS: 'on or off: plan a bulk write as new people while its reads are out, and plan it again when they disagree (default on)',
  LEADS_STATEMENT_TIMEOUT_MS: `time limit of each list and search statement in ms, ${STATEMENT_TIMEOUT_MIN_MS}-${STATEMENT_TIMEOUT_MAX_MS}; past it the request is a 400 saying how to narrow it (default ${DEFAULT_STATEMENT_TIMEOUT_MS})`,
  LEADS_LOG_LEVEL: `daemon log level: ${LOG_LEVELS.join(', ')} (default info)`,
  LEADS_BASE_URL: 'the API the client commands (pull, push) talk to, e.g. http://127.0.0.1:8080',
  LEADS_API_TOKEN: "the client commands' API token (svc_...)",
  LEADS_CUSTOMER_ID: "the client commands' customer id (UUID)",
  LEADS_PROFILE: 'the profile of client settings to use (leads config), over the one `leads config use` chose',
}

/**
 * Parses and validates the environment once. Throws ConfigError naming the variable on a bad
 * value, so start-up stops with one clear line instead of half-starting.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const databaseUrl = read(env, 'LEADS_DATABASE_URL')
  const database = parseDatabaseUrl(databaseUrl ?? DEFAULT_DATABASE_URL, cwd)
  // Beside the SQLite file; an in-memory database has none, and its generated key goes where a server's would.
  const dataDir = database.client === 'sqlite' && database.filename !== ':memory:' ? path.dirname(database.filename) : path.resolve(cwd, '.leads')
  const masterKey = parseMasterKey(read(env, 'LEADS_MASTER_KEY'))
  if (database.client === 'mysql' && masterKey === null) {
    throw new ConfigError('LEADS_MASTER_KEY', 'is required when LEADS_DATABASE_URL points at MySQL (32 bytes, hex or base64)')
  }

  const config: Config = {
    database,
    databaseDefaulted: databaseUrl === undefined,
    redis: parseRedisConfig((name) => read(env, name)),
    host: read(env, 'LEADS_HOST') ?? '127.0.0.1',
    port: parsePort(read(env, 'LEADS_PORT')),
    masterKey,
    dataDir,
    webhookAllowHosts: parseAllowHosts(read(env, 'LEADS_WEBHOOK_ALLOW_HOSTS')),
    trustedProxies: TrustedProxies.parse(read(env, 'LEADS_TRUSTED_PROXIES')).entries,
    metricsEnabled: parseMetrics(read(env, 'LEADS_METRICS')),
    createGuess: parseOnOff(read(env, 'LEADS_CREATE_GUESS'), 'LEADS_CREATE_GUESS', true),
    bulkGuess: parseOnOff(read(env, 'LEADS_BULK_GUESS'), 'LEADS_BULK_GUESS', true),
    statementTimeoutMs: parseStatementTimeout(read(env, 'LEADS_STATEMENT_TIMEOUT_MS')),
    logLevel: parseLogLevel(read(env, 'LEADS_LOG_LEVEL')),
    client: {
      baseUrl: parseOptionalHttpUrl(read(env, 'LEADS_BASE_URL'), 'LEADS_BASE_URL'),
      apiToken: read(env, 'LEADS_API_TOKEN') ?? null,
      customerId: read(env, 'LEADS_CUSTOMER_ID') ?? null,
      profile: read(env, 'LEADS_PROFILE') ?? null,
    },
  }
  return deepFreeze(config)
}

// Only 1 turns metrics on; any other word (yes, true) is refused, so an operator who asked for metrics never runs without them unawares.
function parseMetrics(raw: string | undefined): boolean {
  if (raw === undefined || raw === '0') return false
  if (raw === '1') return true
  throw new ConfigError('LEADS_METRICS', `must be 1 (serve metrics) or 0, got ${JSON.stringify(raw)}`)
}

function parseOnOff(raw: string | undefined, name: string, fallback: boolean): boolean {
  if (raw === undefined) return fallback
  if (raw === 'on' || raw === 'off') return raw === 'on'
  throw new ConfigError(name, `must be on or off, got ${JSON.stringify(raw)}`)
}

// Entries are matched as host or host:port (webhooks/ssrf.ts); anything else, a URL above all, would exempt nothing, silently.
function parseAllowHosts(raw: string | undefined): string[] {
  const entries = (raw ?? '')
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter(Boolean)
  for (const entry of entries) {
    const match = /^(\[[0-9a-f:.]+\]|[^:/?#@\s[\]]+)(?::(\d{1,5}))?$/.exec(entry)
    if (!match || (match[2] !== undefined && Number(match[2]) > 65_535) || !URL.canParse(`https://${match[1]}/`)) {
      throw new ConfigError(
        'LEADS_WEBHOOK_ALLOW_HOSTS',
        `has ${JSON.stringify(entry)}, which is not host[:port]; expected e.g. localhost:8443,receiver.test (no scheme or path)`,
      )
    }
  }
  return entries
}

function parseStatementTimeout(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_STATEMENT_TIMEOUT_MS
  const ms = Number(raw)
  if (!/^\d+$/.test(raw) || ms < STATEMENT_TIMEOUT_MIN_MS || ms > STATEMENT_TIMEOUT_MAX_MS) {
    throw new ConfigError(
      'LEADS_STATEMENT_TIMEOUT_MS',
      `must be an integer number of milliseconds from ${STATEMENT_TIMEOUT_MIN_MS} to ${STATEMENT_TIMEOUT_MAX_MS}, got "${raw}"`,
    )
  }
  return ms
}

function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === '' ? undefined : value
}

function parseDatabaseUrl(raw: string, cwd: string): DatabaseConfig {
  if (raw.startsWith('sqlite:')) {
    // sqlite://./relative/file.db, sqlite:///absolute/file.db and sqlite::memory: are accepted.
    const rest = raw.slice('sqlite:'.length).replace(/^\/\//, '')
    if (rest === '') throw new ConfigError('LEADS_DATABASE_URL', `has no file path: ${raw}`)
    const filename = rest === ':memory:' ? ':memory:' : path.resolve(cwd, rest)
    return {client: 'sqlite', filename, url: raw}
  }

  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError('LEADS_DATABASE_URL', 'is not a URL; expected sqlite://./path.db or mysql://user:pass@host:3306/db')
  }
  if (url.protocol !== 'mysql:') {
    throw new ConfigError('LEADS_DATABASE_URL', `has unsupported scheme "${url.protocol}"; use sqlite:// or mysql://`)
  }
  if (url.pathname.length <= 1) throw new ConfigError('LEADS_DATABASE_URL', 'names no database; add /dbname to the URL')
  return {client: 'mysql', url: raw}
}

function parsePort(raw: string | undefined): number {
  if (raw === undefined) return 8080
  const port = Number(raw)
  if (!/^\d+$/.test(raw) || port > 65_535) throw new ConfigError('LEADS_PORT', `must be an integer 0-65535, got "${raw}"`)
  return port
}

/** Accepts 64 hex characters or base64 of exactly 32 bytes. */
export function parseMasterKey(raw: string | undefined, variable = 'LEADS_MASTER_KEY'): Buffer | null {
  if (raw === undefined) return null
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, 'hex')
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(raw)) {
    const key = Buffer.from(raw, 'base64')
    if (key.length === 32) return key
  }
  throw new ConfigError(variable, 'must be 32 bytes as 64 hex characters or base64')
}

function parseLogLevel(raw: string | undefined): string {
  if (raw === undefined) return 'info'
  if (!LOG_LEVELS.includes(raw)) throw new ConfigError('LEADS_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}`)
  return raw
}

function parseOptionalHttpUrl(raw: string | undefined, variable: string): string | null {
  if (raw === undefined) return null
  const url = URL.canParse(raw) ? new URL(raw) : null
  // fetch refuses them anyway, and each error would print the password.
  if (url && (url.username !== '' || url.password !== '')) throw new ConfigError(variable, 'must not hold a user or password (the API token authenticates)')
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new ConfigError(variable, `must be an http(s) URL, got "${withoutCredentials(raw)}"`)
  return raw.replace(/\/+$/, '')
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}
