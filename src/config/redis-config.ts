import {ConfigError} from '../shared/errors.js'
import {withoutCredentials} from '../shared/text.js'

/** One Redis server (a cluster seed node or a sentinel). */
interface RedisNode {
  readonly host: string
  readonly port: number
}

/** Credentials and TLS shared by every node of a cluster or a sentinel deployment. */
interface RedisNodeSecurity {
  readonly username: string | null
  readonly password: string | null
  readonly tls: boolean
}

/** Where Redis is: one server, a Redis Cluster (seed nodes), or a master found through Sentinel. */
export type RedisConfig =
  | {readonly mode: 'single'; readonly url: string}
  | ({readonly mode: 'cluster'; readonly nodes: readonly RedisNode[]} & RedisNodeSecurity)
  | ({readonly mode: 'sentinel'; readonly sentinels: readonly RedisNode[]; readonly masterName: string} & RedisNodeSecurity)

/** The variables that choose the Redis topology; at most one of the first three may be set. */
type RedisVariable = 'LEADS_REDIS_URL' | 'LEADS_REDIS_CLUSTER_NODES' | 'LEADS_REDIS_SENTINELS' | 'LEADS_REDIS_SENTINEL_MASTER'

const NODE_FORMS = 'host:port or redis[s]://[user:password@]host:port, separated by commas'

/** Parses the Redis variables (already trimmed, empty as undefined) into one topology, or null when none is set. */
export function parseRedisConfig(read: (name: RedisVariable) => string | undefined): RedisConfig | null {
  const url = read('LEADS_REDIS_URL')
  const clusterNodes = read('LEADS_REDIS_CLUSTER_NODES')
  const sentinels = read('LEADS_REDIS_SENTINELS')
  const masterName = read('LEADS_REDIS_SENTINEL_MASTER')

  const chosen = (['LEADS_REDIS_URL', 'LEADS_REDIS_CLUSTER_NODES', 'LEADS_REDIS_SENTINELS'] as const).filter((name) => read(name) !== undefined)
  if (chosen.length > 1)
    throw new ConfigError(chosen[1]!, `cannot be combined with ${chosen[0]}: set one of LEADS_REDIS_URL, LEADS_REDIS_CLUSTER_NODES, LEADS_REDIS_SENTINELS`)
  if (masterName !== undefined && sentinels === undefined) throw new ConfigError('LEADS_REDIS_SENTINEL_MASTER', 'is set without LEADS_REDIS_SENTINELS')

  if (url !== undefined) return {mode: 'single', url: parseRedisUrl(url)}
  if (clusterNodes !== undefined) return {mode: 'cluster', ...parseNodeList(clusterNodes, 'LEADS_REDIS_CLUSTER_NODES')}
  if (sentinels !== undefined) {
    if (masterName === undefined)
      throw new ConfigError('LEADS_REDIS_SENTINEL_MASTER', 'is required with LEADS_REDIS_SENTINELS: the master name the sentinels monitor (e.g. mymaster)')
    const {nodes, ...security} = parseNodeList(sentinels, 'LEADS_REDIS_SENTINELS')
    return {mode: 'sentinel', sentinels: nodes, masterName, ...security}
  }
  return null
}

/** Where Redis is, for logs and `leads status`: never the credentials. */
export function describeRedis(config: RedisConfig): string {
  if (config.mode === 'single') return withoutCredentials(config.url)
  const list = (nodes: readonly RedisNode[]) => nodes.map(formatNode).join(',')
  if (config.mode === 'cluster') return `cluster ${list(config.nodes)}`
  return `sentinel master "${config.masterName}" via ${list(config.sentinels)}`
}

function parseRedisUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError('LEADS_REDIS_URL', 'is not a URL; expected redis://host:6379/0')
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError('LEADS_REDIS_URL', `has unsupported scheme "${url.protocol}"; use redis:// or rediss://`)
  }
  return raw
}

/**
 * A comma-separated node list. Credentials and TLS apply to every node (a cluster hands out the
 * addresses of nodes it discovers, with no credentials of their own), so they must agree.
 */
function parseNodeList(raw: string, variable: RedisVariable): {nodes: RedisNode[]} & RedisNodeSecurity {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
  if (entries.length === 0) throw new ConfigError(variable, `names no node; expected ${NODE_FORMS}`)
  const parsed = entries.map((entry) => parseNode(entry, variable))
  const [first] = parsed
  const security: RedisNodeSecurity = {username: first!.username, password: first!.password, tls: first!.tls}
  for (const node of parsed) {
    if (node.username !== security.username || node.password !== security.password || node.tls !== security.tls) {
      throw new ConfigError(variable, `mixes credentials or schemes (${formatNode(node)}); every node must use the same`)
    }
  }
  const nodes = parsed.map(({host, port}) => ({host, port}))
  const seen = new Set<string>()
  for (const node of nodes) {
    if (seen.has(formatNode(node))) throw new ConfigError(variable, `names ${formatNode(node)} twice`)
    seen.add(formatNode(node))
  }
  return {nodes, ...security}
}

function parseNode(entry: string, variable: RedisVariable): RedisNode & RedisNodeSecurity {
  const hasScheme = entry.includes('://')
  let url: URL
  try {
    url = new URL(hasScheme ? entry : `redis://${entry}`)
  } catch {
    throw new ConfigError(variable, `has an entry that is not ${NODE_FORMS}: "${withoutCredentials(entry)}"`)
  }
  const shown = withoutCredentials(entry)
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new ConfigError(variable, `has unsupported scheme "${url.protocol}" in "${shown}"; use redis:// or rediss://`)
  if (!hasScheme && (url.username || url.password))
    throw new ConfigError(variable, `has credentials outside a URL in "${shown}"; write redis://user:password@host:port`)
  if (url.port === '') throw new ConfigError(variable, `has an entry without a port: "${shown}"; expected ${NODE_FORMS}`)
  // Cluster nodes and sentinels have no database to choose; a path would be silently ignored.
  if (url.pathname !== '' && url.pathname !== '/')
    throw new ConfigError(variable, `has a path in "${shown}": cluster nodes and sentinels take host:port only (a cluster has database 0 only)`)
  if (url.search !== '' || url.hash !== '') throw new ConfigError(variable, `has options in "${shown}"; expected ${NODE_FORMS}`)
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(url.port),
    username: url.username ? decodeURIComponent(url.username) : null,
    password: url.password ? decodeURIComponent(url.password) : null,
    tls: url.protocol === 'rediss:',
  }
}

function formatNode(node: RedisNode): string {
  return node.host.includes(':') ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`
}
