// A three-node MariaDB Galera cluster of the test's own on loopback, and HAProxy in front of it
// sending every connection to one node at a time (the single-writer setup docs/operations.md
// describes). Nodes run as the `mysql` user over mysql-owned data directories: rsync state
// transfer starts its receiver as that user, and as root it would run as `nobody` and fail.
import {type ChildProcess, execFileSync, spawn} from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'

import mysql from 'mysql2/promise'

import {ensureHaproxy} from './haproxy.js'
import {waitUntil} from './local-servers.js'

const PROVIDER = '/usr/lib/galera/libgalera_smm.so'
/**
 * Loopback ports, from `base` (4571 unless the caller gives another): group communication,
 * incremental and full state transfer at base, base + 3 and base + 6 (one per node), SQL at
 * base + 20000, the health checks at base + 20010, HAProxy at base + 20019 and its statistics at
 * base + 20020. Two clusters on one machine need bases at least 30 apart; the topology suite's is
 * 4571, `npm run test:galera`'s 4671.
 */
export const TOPOLOGY_SUITE_BASE_PORT = 4571
function portsFrom(base: number) {
  return {gcomm: base, ist: base + 3, sst: base + 6, sql: base + 20_000, check: base + 20_010, balancer: base + 20_019, stats: base + 20_020}
}

/** One node: its data directory and SQL port; `process` is null while it is down. */
export interface GaleraNode {
  readonly index: number
  readonly datadir: string
  readonly port: number
  readonly url: string
  process: ChildProcess | null
}

/** What SHOW STATUS says of a node's place in the cluster; null when it does not answer. */
export interface NodeState {
  /** 4 is Synced: it takes writes. */
  localState: number
  clusterSize: number
  /** Primary, or non-Primary without quorum. */
  clusterStatus: string
}

export class GaleraCluster {
  readonly nodes: GaleraNode[]
  private balancerProcess: ChildProcess | null = null
  private readonly checks: http.Server[] = []

  private readonly ports: ReturnType<typeof portsFrom>

  private constructor(
    private readonly dir: string,
    size: number,
    basePort: number,
  ) {
    this.ports = portsFrom(basePort)
    this.nodes = Array.from({length: size}, (_, index) => ({
      index,
      datadir: path.join(dir, `node${index + 1}`),
      port: this.ports.sql + index,
      url: `mysql://root@127.0.0.1:${this.ports.sql + index}`,
      process: null,
    }))
  }

  /** Where the service connects: HAProxy, which sends every connection to the first node that is Synced. */
  get url(): string {
    return `mysql://root@127.0.0.1:${this.ports.balancer}`
  }

  /**
   * The ports of a cluster from `basePort` that something on loopback already listens on: a
   * second cluster on the same ports would join or break the first, so a caller that finds any
   * waits for it to stop rather than start beside it.
   */
  static async portsInUse(basePort = TOPOLOGY_SUITE_BASE_PORT, size = 3): Promise<number[]> {
    const ports = portsFrom(basePort)
    const all = [...Array.from({length: size}, (_, i) => [ports.gcomm + i, ports.sql + i, ports.check + i]).flat(), ports.balancer, ports.stats]
    const taken = await Promise.all(all.map(listening))
    return all.filter((_, i) => taken[i])
  }

  /**
   * Initialises the first node's data directory, bootstraps the cluster on it, and starts the
   * others one after the other (each takes a full state transfer, rsync, from a member), then
   * HAProxy and its health checks.
   */
  static async start(dir: string, {size = 3, basePort = TOPOLOGY_SUITE_BASE_PORT} = {}): Promise<GaleraCluster> {
    const cluster = new GaleraCluster(dir, size, basePort)
    fs.chownSync(dir, ...mysqlIds())
    for (const node of cluster.nodes) {
      fs.mkdirSync(node.datadir)
      fs.chownSync(node.datadir, ...mysqlIds())
    }
    execFileSync(
      'mariadb-install-db',
      ['--no-defaults', `--datadir=${cluster.nodes[0]!.datadir}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=mysql'],
      {
        stdio: 'pipe',
      },
    )
    try {
      await cluster.startNode(0, {bootstrap: true})
      for (let index = 1; index < size; index++) await cluster.startNode(index)
      await cluster.startBalancer()
    } catch (error) {
      // Whatever started is stopped: the caller has no cluster to stop.
      await cluster.stop()
      throw error
    }
    return cluster
  }

  /** Starts a node (again) and waits until it is Synced; `bootstrap` forms a new cluster on it. */
  async startNode(index: number, {bootstrap = false} = {}): Promise<void> {
    const node = this.nodes[index]!
    const gcomm = this.nodes.map((_, i) => `127.0.0.1:${this.ports.gcomm + i}`).join(',')
    const args = [
      '--no-defaults',
      `--datadir=${node.datadir}`,
      `--port=${node.port}`,
      '--bind-address=127.0.0.1',
      `--socket=${path.join(node.datadir, 'mariadb.sock')}`,
      `--pid-file=${path.join(node.datadir, 'mariadb.pid')}`,
      '--user=mysql',
      `--log-error=${path.join(node.datadir, 'error.log')}`,
      '--innodb-buffer-pool-size=64M',
      '--innodb-log-file-size=48M',
      '--skip-name-resolve',
      '--binlog-format=ROW',
      '--innodb-autoinc-lock-mode=2',
      '--default-storage-engine=InnoDB',
      '--wsrep-on=ON',
      `--wsrep-provider=${PROVIDER}`,
      '--wsrep-cluster-name=leads-test',
      `--wsrep-cluster-address=gcomm://${gcomm}`,
      `--wsrep-node-name=node${index + 1}`,
      '--wsrep-node-address=127.0.0.1',
      `--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:${this.ports.gcomm + index};ist.recv_addr=127.0.0.1:${this.ports.ist + index};gcache.size=64M`,
      '--wsrep-sst-method=rsync',
      `--wsrep-sst-receive-address=127.0.0.1:${this.ports.sst + index}`,
      ...(bootstrap ? ['--wsrep-new-cluster'] : []),
    ]
    node.process = spawn('mariadbd', args, {stdio: 'ignore'})
    const started = node.process
    await waitUntil(
      async () => {
        if (started.exitCode !== null) throw new Error(`node${index + 1} exited with ${started.exitCode}; see ${node.datadir}/error.log`)
        return (await this.state(index))?.localState === 4
      },
      `node${index + 1} to be Synced`,
      90_000,
    )
  }

  /** Kills a node with SIGKILL (a crash) and waits until it is gone. */
  async kill(index: number): Promise<void> {
    const child = this.nodes[index]!.process
    this.nodes[index]!.process = null
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }

  /** A node's wsrep state, or null when it does not answer. */
  async state(index: number): Promise<NodeState | null> {
    const connection = await mysql.createConnection({uri: this.nodes[index]!.url, connectTimeout: 1000}).catch(() => null)
    if (!connection) return null
    try {
      const [rows] = (await connection.query(
        `SHOW STATUS WHERE Variable_name IN ('wsrep_local_state', 'wsrep_cluster_size', 'wsrep_cluster_status')`,
      )) as unknown as [Array<{Variable_name: string; Value: string}>]
      const value = (name: string) => rows.find((row) => row.Variable_name === name)?.Value ?? ''
      return {localState: Number(value('wsrep_local_state')), clusterSize: Number(value('wsrep_cluster_size')), clusterStatus: value('wsrep_cluster_status')}
    } catch {
      return null
    } finally {
      connection.destroy()
    }
  }

  /** What HAProxy says of each node: UP or DOWN, and its sessions now. */
  async balancerStats(): Promise<Array<{node: string; status: string; sessions: number; total: number}>> {
    const csv = await (await fetch(`http://127.0.0.1:${this.ports.stats}/stats;csv`)).text()
    const [header, ...rows] = csv.trim().split('\n')
    const columns = header!.replace(/^# /, '').split(',')
    const at = (name: string) => columns.indexOf(name)
    return rows
      .map((row) => row.split(','))
      .filter((cells) => cells[at('pxname')] === 'galera' && /^node\d$/.test(cells[at('svname')] ?? ''))
      .map((cells) => ({node: cells[at('svname')]!, status: cells[at('status')]!, sessions: Number(cells[at('scur')]), total: Number(cells[at('stot')])}))
  }

  /** Stops HAProxy, the checks and every node; the data directories stay for the caller to remove. */
  async stop(): Promise<void> {
    if (this.balancerProcess && this.balancerProcess.exitCode === null) {
      const exited = new Promise((resolve) => this.balancerProcess!.once('exit', resolve))
      this.balancerProcess.kill('SIGKILL')
      await exited
    }
    await Promise.all(this.checks.map((server) => new Promise((resolve) => server.close(resolve))))
    await Promise.all(this.nodes.map((node) => this.kill(node.index)))
  }

  /** Kills every process synchronously: for process exit, when the test could not stop them itself. */
  killAllNow(): void {
    for (const child of [this.balancerProcess, ...this.nodes.map((node) => node.process)]) if (child && child.exitCode === null) child.kill('SIGKILL')
  }

  /**
   * HAProxy in TCP mode: node 1 active, the others backups (only the first backup that is up
   * takes connections), so one node takes every write. Each node's health is an HTTP check of
   * the test's own that answers 200 only while the node is Synced (wsrep_local_state 4): a node
   * that is up but joining, donating or without quorum takes nothing. Sessions to a node marked
   * down are shut, and so are the backup's once node 1 is back, so writes never go to two
   * nodes at once.
   */
  private async startBalancer(): Promise<void> {
    for (const node of this.nodes) {
      const server = http.createServer((request, response) => {
        void this.state(node.index).then((state) => {
          response.statusCode = state?.localState === 4 && state.clusterStatus === 'Primary' ? 200 : 503
          response.end()
        })
      })
      await new Promise<void>((resolve) => server.listen(this.ports.check + node.index, '127.0.0.1', resolve))
      this.checks.push(server)
    }
    const config = [
      'global',
      '  maxconn 4096',
      'defaults',
      '  mode tcp',
      '  timeout connect 1s',
      // A check that takes longer than this fails: a node busy taking over must not be marked down for being slow to answer.
      '  timeout check 1s',
      '  timeout client 1h',
      '  timeout server 1h',
      'frontend mysql',
      `  bind 127.0.0.1:${this.ports.balancer}`,
      '  default_backend galera',
      'backend galera',
      '  option httpchk GET /',
      '  http-check expect status 200',
      '  default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions',
      ...this.nodes.map(
        (node) =>
          `  server node${node.index + 1} 127.0.0.1:${node.port} check port ${this.ports.check + node.index}${node.index === 0 ? ' on-marked-up shutdown-backup-sessions' : ' backup'}`,
      ),
      'listen stats',
      '  mode http',
      `  bind 127.0.0.1:${this.ports.stats}`,
      '  stats enable',
      '  stats uri /stats',
      '',
    ].join('\n')
    const file = path.join(this.dir, 'haproxy.cfg')
    fs.writeFileSync(file, config)
    const child = spawn(ensureHaproxy(), ['-db', '-f', file], {stdio: ['ignore', 'ignore', 'pipe']})
    this.balancerProcess = child
    let errors = ''
    child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()))
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}: ${errors}`)
        const connection = await mysql.createConnection({uri: this.url, connectTimeout: 1000}).catch(() => null)
        connection?.destroy()
        return connection !== null
      },
      'haproxy to pass connections to node 1',
      15_000,
    )
  }
}

/** True when something accepts TCP connections on the loopback port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({host: '127.0.0.1', port})
    const answer = (accepted: boolean) => {
      socket.destroy()
      resolve(accepted)
    }
    socket.setTimeout(1000)
    socket.once('connect', () => answer(true))
    socket.once('error', () => answer(false))
    socket.once('timeout', () => answer(false))
  })
}

/** The uid and gid of the `mysql` user the nodes run as. */
function mysqlIds(): [number, number] {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'mysql']).toString().trim())
  return [id('-u'), id('-g')]
}
