// Servers and waits of the tests' own on loopback: free ports, throwaway redis-servers and mariadbds, polling.
import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

import mysql from 'mysql2/promise'
import {createClient} from 'redis'

/** A free loopback port for a server of the test's own. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const {port} = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** A throwaway redis-server of the test's own (no persistence), so killing it disturbs nothing else. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {stdio: 'ignore'})
  const client = createClient({url: `redis://127.0.0.1:${port}`, socket: {reconnectStrategy: false}})
  client.on('error', () => undefined)
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await client.connect()
      await client.close()
      return child
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  child.kill('SIGKILL')
  throw new Error('redis-server did not start')
}

/** Kills a throwaway redis-server and waits until it is gone, so a restart on its port cannot race it. */
export async function killRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/** Polls `probe` every 25 ms until it returns something truthy, or fails naming `what`. */
export async function waitUntil<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** A throwaway mariadbd of the test's own: its own data directory and loopback port, never the shared server. */
export interface OwnMariadb {
  readonly url: string
  readonly child: ChildProcess
}

/**
 * Starts mariadbd on `port` with `datadir` (created with mariadb-install-db when new), as root
 * with root's empty password on loopback only, and waits until it answers; `extraArgs` go to
 * mariadbd after the usual ones (`--read-only`, `--log-bin`, `--server-id=2`).
 */
export async function startMariadb(datadir: string, port: number, extraArgs: string[] = []): Promise<OwnMariadb> {
  if (!fs.existsSync(path.join(datadir, 'mysql'))) {
    await run('mariadb-install-db', ['--no-defaults', `--datadir=${datadir}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root'])
  }
  const child = spawn(
    'mariadbd',
    [
      '--no-defaults',
      `--datadir=${datadir}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${path.join(datadir, 'mariadb.sock')}`,
      '--user=root',
      `--log-error=${path.join(datadir, 'error.log')}`,
      '--innodb-buffer-pool-size=64M',
      '--skip-name-resolve',
      ...extraArgs,
    ],
    {stdio: 'ignore'},
  )
  const url = `mysql://root@127.0.0.1:${port}`
  await waitUntil(
    async () => {
      const connection = await mysql.createConnection({uri: url}).catch(() => null)
      await connection?.end()
      return connection !== null
    },
    'mariadbd to answer',
    30_000,
  )
  return {url, child}
}

/** Kills a throwaway mariadbd (SIGKILL: a crash, InnoDB recovers at the next start) and waits until it is gone. */
export async function killMariadb(server: OwnMariadb): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  const exited = new Promise((resolve) => server.child.once('exit', resolve))
  server.child.kill('SIGKILL')
  await exited
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {stdio: 'ignore'})
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))))
  })
}
