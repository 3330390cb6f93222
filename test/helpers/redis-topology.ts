// Throwaway Redis Clusters and Sentinel deployments of the tests' own on loopback: free ports,
// their own directories under one temp dir, every process killed by stop() whatever happened.
import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {createClient} from 'redis'

import {freePort, waitUntil} from './local-servers.js'

/** One redis-server (data node or sentinel) of a test topology. */
export interface RedisProcess {
  readonly port: number
  readonly child: ChildProcess
}

/** A set of redis-servers under one temp dir; stop() kills them all and removes the dir. */
class RedisProcesses {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-redis-topology-'))
  readonly processes: RedisProcess[] = []

  async spawnServer(name: string, args: string[], port: number, configFile?: string): Promise<RedisProcess> {
    const dir = path.join(this.dir, name)
    fs.mkdirSync(dir, {recursive: true})
    const logfile = path.join(dir, 'redis.log')
    const child = spawn(
      'redis-server',
      [
        ...(configFile ? [configFile] : []),
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--logfile',
        logfile,
        '--save',
        '',
        '--appendonly',
        'no',
        ...args,
      ],
      {stdio: 'ignore'},
    )
    const server = {port, child}
    this.processes.push(server)
    await waitUntil(async () => (await command(port, ['PING']).catch(() => null)) === 'PONG', `redis-server ${name} on ${port} to answer`)
    return server
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((server) => killProcess(server.child)))
    fs.rmSync(this.dir, {recursive: true, force: true})
  }
}

/** Sends one command to one server and closes the connection. */
export async function command(port: number, args: string[]): Promise<unknown> {
  const client = createClient({url: `redis://127.0.0.1:${port}`, socket: {reconnectStrategy: false, connectTimeout: 1000}})
  client.on('error', () => undefined)
  await client.connect()
  try {
    return await client.sendCommand(args)
  } finally {
    client.destroy()
  }
}

/** SIGKILL, as a crash; resolves once the process is gone. */
export async function killProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

export interface ClusterNode extends RedisProcess {
  /** The cluster node id (CLUSTER MYID). */
  readonly id: string
}

/** A Redis Cluster of `masters` masters with `replicas` replicas each, every node on loopback. */
export class RedisClusterUnderTest {
  private constructor(
    private readonly processes: RedisProcesses,
    readonly nodes: ClusterNode[],
  ) {}

  /** LEADS_REDIS_CLUSTER_NODES for the daemon: every node as a seed. */
  get seedList(): string {
    return this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',')
  }

  /** A data port and a cluster bus port per node, free now: for a daemon configured before its cluster starts. */
  static async choosePorts(nodes: number): Promise<Array<[number, number]>> {
    const ports = await distinctFreePorts(nodes * 2)
    return Array.from({length: nodes}, (_, i) => [ports[2 * i]!, ports[2 * i + 1]!])
  }

  static async start(masters: number, replicas: number, ports?: Array<[number, number]>): Promise<RedisClusterUnderTest> {
    const processes = new RedisProcesses()
    try {
      const chosen = ports ?? (await RedisClusterUnderTest.choosePorts(masters * (1 + replicas)))
      const nodes: ClusterNode[] = []
      for (let i = 0; i < masters * (1 + replicas); i++) {
        const [port, busPort] = chosen[i]!
        // The bus port is chosen too (not port + 10000, which may be taken or past 65535);
        // a 1 s node timeout makes a failover take seconds, not the default 15 s.
        const server = await processes.spawnServer(
          `node-${i}`,
          ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort), '--cluster-node-timeout', '1000'],
          port,
        )
        nodes.push({...server, id: String(await command(server.port, ['CLUSTER', 'MYID']))})
      }
      await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'])
      const cluster = new RedisClusterUnderTest(processes, nodes)
      await waitUntil(() => cluster.isSettled(masters * (1 + replicas), masters), 'the cluster to be ok on every node, every replica in sync', 30_000)
      return cluster
    } catch (error) {
      await processes.stop()
      throw error
    }
  }

  /** Every live node sees the cluster ok, knows every live node, and every master has its replicas in sync. */
  async isSettled(liveNodes: number, masters: number): Promise<boolean> {
    const live = this.nodes.filter((node) => node.child.exitCode === null && node.child.signalCode === null)
    if (live.length !== liveNodes) return false
    for (const node of live) {
      const info = String(await command(node.port, ['CLUSTER', 'INFO']).catch(() => ''))
      if (!info.includes('cluster_state:ok')) return false
    }
    const topology = await this.topology(live[0]!.port)
    if (topology.filter((node) => node.master && !node.failed).length !== masters) return false
    for (const node of live) {
      const replication = String(await command(node.port, ['INFO', 'replication']).catch(() => ''))
      if (replication.includes('role:slave') && !replication.includes('master_link_status:up')) return false
    }
    return true
  }

  /** The live master that serves `key`'s slot now, as `port`'s node sees the cluster. */
  async masterOf(key: string): Promise<ClusterNode> {
    const live = this.nodes.find((node) => node.child.exitCode === null && node.child.signalCode === null)!
    const slot = Number(await command(live.port, ['CLUSTER', 'KEYSLOT', key]))
    const owner = (await this.topology(live.port)).find((node) => node.master && !node.failed && node.slots.some(([from, to]) => slot >= from && slot <= to))
    const node = owner && this.nodes.find((each) => each.id === owner.id)
    if (!node) throw new Error(`no live master serves slot ${slot}`)
    return node
  }

  /** Kills one node's process (SIGKILL): its replica is promoted after the node timeout. */
  async kill(node: ClusterNode): Promise<void> {
    await killProcess(node.child)
  }

  async stop(): Promise<void> {
    await this.processes.stop()
  }

  private async topology(port: number): Promise<Array<{id: string; master: boolean; failed: boolean; slots: Array<[number, number]>}>> {
    const lines = String(await command(port, ['CLUSTER', 'NODES']))
      .trim()
      .split('\n')
    return lines.map((line) => {
      const [id, , flags, , , , , , ...slots] = line.split(' ')
      return {
        id: id!,
        master: flags!.split(',').includes('master'),
        failed: /fail/.test(flags!),
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to] = range.split('-').map(Number)
            return [from!, to ?? from!] as [number, number]
          }),
      }
    })
  }
}

export const SENTINEL_MASTER = 'leadsmaster'

/** One master, one replica and three sentinels (quorum 2) on loopback. */
export class RedisSentinelUnderTest {
  private constructor(
    private readonly processes: RedisProcesses,
    readonly master: RedisProcess,
    readonly replica: RedisProcess,
    readonly sentinels: RedisProcess[],
  ) {}

  /** LEADS_REDIS_SENTINELS for the daemon. */
  get sentinelList(): string {
    return this.sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(',')
  }

  static async start(): Promise<RedisSentinelUnderTest> {
    const processes = new RedisProcesses()
    try {
      const [masterPort, replicaPort, ...sentinelPorts] = await distinctFreePorts(5)
      const master = await processes.spawnServer('master', [], masterPort!)
      const replica = await processes.spawnServer('replica', ['--replicaof', '127.0.0.1', String(masterPort)], replicaPort!)
      await waitUntil(async () => String(await command(replicaPort!, ['INFO', 'replication'])).includes('master_link_status:up'), 'the replica to sync')
      const sentinels: RedisProcess[] = []
      for (const [i, port] of sentinelPorts.entries()) {
        // A sentinel rewrites its configuration file, so each gets one of its own.
        const file = path.join(processes.dir, `sentinel-${i}.conf`)
        fs.writeFileSync(
          file,
          [
            `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${masterPort} 2`,
            `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
            `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
            `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
            '',
          ].join('\n'),
        )
        sentinels.push(await processes.spawnServer(`sentinel-${i}`, ['--sentinel'], port!, file))
      }
      const deployment = new RedisSentinelUnderTest(processes, master, replica, sentinels)
      // Each sentinel must know the replica and the two other sentinels before a failover can be agreed.
      await waitUntil(
        async () => {
          for (const sentinel of sentinels) {
            const others = (await command(sentinel.port, ['SENTINEL', 'SENTINELS', SENTINEL_MASTER])) as unknown[]
            const replicas = (await command(sentinel.port, ['SENTINEL', 'REPLICAS', SENTINEL_MASTER])) as unknown[]
            if (others.length !== 2 || replicas.length !== 1) return false
          }
          return true
        },
        'the sentinels to know each other and the replica',
        30_000,
      )
      return deployment
    } catch (error) {
      await processes.stop()
      throw error
    }
  }

  /** The port of the master the sentinels name now. */
  async masterPort(): Promise<number> {
    const [, port] = (await command(this.sentinels[0]!.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER])) as [string, string]
    return Number(port)
  }

  async killMaster(): Promise<void> {
    await killProcess(this.master.child)
  }

  async stop(): Promise<void> {
    await this.processes.stop()
  }
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>()
  for (let attempt = 0; ports.size < count && attempt < count * 20; attempt++) ports.add(await freePort())
  if (ports.size < count) throw new Error(`could not find ${count} free ports`)
  return [...ports]
}

function run(program: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${program} exited ${code}: ${stderr.slice(-500)}`))))
  })
}
