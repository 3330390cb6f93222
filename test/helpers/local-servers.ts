// Servers and waits of the tests' own on loopback: free ports, throwaway redis-servers, polling.
import {type ChildProcess, spawn} from 'node:child_process'
import net from 'node:net'

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
