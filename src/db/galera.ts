import {type Db, isMysql} from './knex.js'

/** The Galera cluster the database server belongs to: how many nodes, and which one this handle reaches. */
export interface GaleraMembership {
  nodes: number
  node: string
}

/**
 * On MySQL, the Galera cluster the server belongs to, or null when it is a server alone
 * (no wsrep provider, or wsrep_cluster_size 0 or 1): the daemon warns at start that it must be
 * the only writer's node (docs/operations.md, "Running on a Galera cluster").
 */
export async function galeraMembership(db: Db): Promise<GaleraMembership | null> {
  if (!isMysql(db)) return null
  const [status] = (await db.raw(`SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'`)) as [Array<{Value: string}>]
  const nodes = Number(status[0]?.Value ?? 0)
  if (!(nodes > 1)) return null
  const [variables] = (await db.raw(`SHOW GLOBAL VARIABLES LIKE 'wsrep_node_name'`)) as [Array<{Value: string}>]
  return {nodes, node: variables[0]?.Value ?? 'unknown'}
}
