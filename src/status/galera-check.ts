import type {Db} from '../db/knex.js'
import {isGaleraNode, LIVE_MS, multiWriter, readStretches} from '../db/writer-nodes.js'
import {safeMessage} from '../log/safe-error.js'

/** `leads status`'s line for a database that is a Galera node: which nodes the running daemons write through. */
export interface GaleraStatus {
  check: 'galera'
  ok: boolean
  summary: string
  hint?: string
  details: Record<string, unknown>
}

/**
 * On a Galera node, the nodes the live daemons write through, from the records they keep
 * (src/db/writer-nodes.ts): ok with one node, failing with several at once; null when the
 * database is no Galera node (or did not answer: the database line says so).
 */
export async function galeraCheck(db: Db | undefined): Promise<GaleraStatus | null> {
  if (!db || !(await isGaleraNode(db).catch(() => false))) return null
  try {
    const {now, stretches} = await readStretches(db)
    const live = stretches.filter((stretch) => now - stretch.seenAt <= LIVE_MS)
    const writers = live.map((stretch) => ({daemon: stretch.daemon, role: stretch.role, node: stretch.nodeName}))
    const found = multiWriter(stretches, now)
    if (found) {
      return {
        check: 'galera',
        ok: false,
        summary: `daemons write through ${found.nodes.length} nodes at once (${found.nodes.join(', ')}): several writers are not supported`,
        hint: 'point every daemon at one balancer with one active node (docs/operations.md, "Several writers are detected")',
        details: {nodes: found.nodes, writers, multi_writer: true},
      }
    }
    const nodes = [...new Set(live.map((stretch) => stretch.nodeName))].sort()
    const summary =
      live.length === 0
        ? 'no daemon writes now'
        : `${live.length} daemon${live.length === 1 ? '' : 's'} write${live.length === 1 ? 's' : ''} through ${nodes.join(', ')}`
    return {check: 'galera', ok: true, summary, details: {nodes, writers, multi_writer: false}}
  } catch (error) {
    return {check: 'galera', ok: false, summary: `cannot read the daemons' writer records (${safeMessage(error)})`, details: {}}
  }
}
