import {type Db, isMysql} from './knex.js'
import {inTransaction} from './transaction.js'

/** How often a daemon on a Galera cluster records the node it writes through. */
export const HEARTBEAT_MS = 2000
/** A daemon whose latest record is older than this has stopped (or lost the database): it writes through no node. */
export const LIVE_MS = 10_000
/**
 * Two stretches on different nodes count as written at once when they overlap by this much. A
 * failover moves every daemon from one node to the next: the old node's stretches end before the
 * new one's begin, give or take the nodes' clocks and two balancers' health checks (HAProxy's
 * `rise 2` at 500 ms), which stay well under it.
 */
export const OVERLAP_MS = 5000
/** Records of daemons gone this long are deleted. */
const FORGET_MS = 3_600_000
/** The longest values written to database_writers (its columns hold them): longer ones are cut. */
export const WRITER_LIMITS = {daemon: 160, role: 16, nodeId: 64, nodeName: 128} as const

/** A daemon's current stretch on one node: from its first record through that node to its latest. */
export interface WriterStretch {
  daemon: string
  role: string
  /** The node's group-communication UUID (wsrep_gcomm_uuid): two nodes never share one. */
  nodeId: string
  /** wsrep_node_name, for people. */
  nodeName: string
  since: number
  seenAt: number
}

/** Daemons writing through different nodes at the same time: what the service does not support. */
export interface MultiWriter {
  /** The node names, sorted. */
  nodes: string[]
  /** The stretches that overlap one on another node. */
  writers: WriterStretch[]
}

/**
 * The live stretches (seen within LIVE_MS of `now`) that overlap, by OVERLAP_MS or more, a live
 * stretch on another node; null when there are none. A daemon starts a new stretch when its
 * record goes through another node than its previous one, so a failover (and the move back)
 * never overlaps itself.
 */
export function multiWriter(stretches: readonly WriterStretch[], now: number): MultiWriter | null {
  const live = stretches.filter((stretch) => now - stretch.seenAt <= LIVE_MS)
  const involved = new Set<WriterStretch>()
  for (const [i, a] of live.entries()) {
    for (const b of live.slice(i + 1)) {
      if (a.nodeId === b.nodeId) continue
      if (Math.min(a.seenAt, b.seenAt) - Math.max(a.since, b.since) >= OVERLAP_MS) involved.add(a).add(b)
    }
  }
  if (involved.size === 0) return null
  const writers = [...involved].sort((a, b) => a.nodeName.localeCompare(b.nodeName) || a.daemon.localeCompare(b.daemon))
  return {nodes: [...new Set(writers.map((writer) => writer.nodeName))].sort(), writers}
}

/** True when the server is a Galera node (wsrep_on), of a cluster of any size; MySQL and a MariaDB alone have it off or not at all. */
export async function isGaleraNode(db: Db): Promise<boolean> {
  if (!isMysql(db)) return false
  const [rows] = (await db.raw(`SHOW GLOBAL VARIABLES LIKE 'wsrep_on'`)) as [Array<{Value: string}>]
  return rows[0]?.Value === 'ON'
}

interface WriterRow {
  daemon: string
  role: string
  node_id: string
  node_name: string
  since: number | string
  seen_at: number | string
}

/** The database's time on this connection's node, in milliseconds: every stamp comes from the nodes' clocks, not the daemons'. */
const NODE_NOW = 'CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)'

/**
 * One daemon's records in database_writers: which node it writes through, since when, seen
 * when. The node is read on the connection that writes the record, in one transaction, so the
 * record names the node the write went through.
 */
export class WriterNodes {
  private stretch: {nodeId: string; since: number} | null = null

  constructor(
    private readonly db: Db,
    readonly daemon: string,
    private readonly role: string,
  ) {}

  /** Records the node this daemon's write goes through now; a stretch begins when it is another than last time. */
  async heartbeat(): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      const [rows] = (await trx.raw(
        `SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_GCOMM_UUID') AS node_id, @@wsrep_node_name AS node_name, ${NODE_NOW} AS now`,
      )) as [Array<{node_id: string | null; node_name: string | null; now: number | string}>]
      const nodeId = (rows[0]?.node_id ?? '').slice(0, WRITER_LIMITS.nodeId)
      const now = Number(rows[0]?.now)
      const since = this.stretch?.nodeId === nodeId ? this.stretch.since : now
      await trx.raw(
        `INSERT INTO database_writers (daemon, role, node_id, node_name, since, seen_at) VALUES (?, ?, ?, ?, ?, ?)
         ON DUPLICATE KEY UPDATE role = VALUES(role), node_id = VALUES(node_id), node_name = VALUES(node_name), since = VALUES(since), seen_at = VALUES(seen_at)`,
        [
          this.daemon.slice(0, WRITER_LIMITS.daemon),
          this.role.slice(0, WRITER_LIMITS.role),
          nodeId.slice(0, WRITER_LIMITS.nodeId),
          (rows[0]?.node_name ?? '').slice(0, WRITER_LIMITS.nodeName),
          since,
          now,
        ],
      )
      this.stretch = {nodeId, since}
    })
  }

  /** Every daemon's current stretch, and the node's time now. */
  async stretches(): Promise<{now: number; stretches: WriterStretch[]}> {
    return readStretches(this.db)
  }

  /** Deletes this daemon's record (it stops writing) and the records of daemons gone long ago. */
  async forget(): Promise<void> {
    await this.db.raw(`DELETE FROM database_writers WHERE daemon = ? OR seen_at < ${NODE_NOW} - ?`, [this.daemon.slice(0, WRITER_LIMITS.daemon), FORGET_MS])
  }
}

/** Every daemon's current stretch, and the node's time now (also for `leads status`). */
export async function readStretches(db: Db): Promise<{now: number; stretches: WriterStretch[]}> {
  const [[clock], rows] = await Promise.all([
    db.raw(`SELECT ${NODE_NOW} AS now`).then((result: [Array<{now: number | string}>]) => result[0]),
    db('database_writers').select<WriterRow[]>('daemon', 'role', 'node_id', 'node_name', 'since', 'seen_at'),
  ])
  return {
    now: Number(clock!.now),
    stretches: rows.map((row) => ({
      daemon: row.daemon,
      role: row.role,
      nodeId: row.node_id,
      nodeName: row.node_name,
      since: Number(row.since),
      seenAt: Number(row.seen_at),
    })),
  }
}
