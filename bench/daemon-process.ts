/**
 * The daemon as benchmarks run it: its own process (`leads daemon`), as in production, so the
 * benchmark's load generator does not share its event loop. With LEADS_BENCH_PROFILE=<dir> the
 * daemon runs under Node's CPU profiler and writes a .cpuprofile there when it stops.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface DaemonProcess {
  readonly url: string
  readonly child: ChildProcess
  /** SIGTERM, then waits for the process to exit (and write its profile). */
  stop(): Promise<void>
}

/** A checkout whose build runs the daemon, and the settings its daemon gets on top of a bench's. */
export interface CheckoutSpec {
  label: string
  root: string
  settings: Record<string, string>
}

/** A checkout as benches take it on the command line: `<dir>[,VAR=value…]`. */
export function checkoutSpec(arg: string): CheckoutSpec {
  const [root, ...settings] = arg.split(',')
  return {
    label: arg,
    root: path.resolve(root!),
    settings: Object.fromEntries(settings.map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)])),
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const {port} = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/**
 * Daemons this process started that have not exited: killed when it exits, however it exits, so a
 * bench that fails half-way (a second build refusing the schema, say) leaves no daemon behind
 * holding its port and its caller's output.
 */
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/**
 * Starts `leads daemon --role <role>` with `env` (on `port`, else a free one) and waits until
 * /healthz answers; `root` is the checkout whose build runs (this one by default).
 */
export async function spawnDaemon(
  env: Record<string, string>,
  role: 'all' | 'api' | 'worker' = 'all',
  port?: number,
  root: string = ROOT,
  /** A file the daemon's standard output (its log) goes to; discarded when absent. */
  logFile?: string,
): Promise<DaemonProcess> {
  port ??= await freePort()
  const profileDir = process.env['LEADS_BENCH_PROFILE']
  const nodeArgs = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'bin/run.js'), 'daemon', '--role', role], {
    env: {...process.env, LEADS_LOG_LEVEL: 'silent', ...env, LEADS_HOST: '127.0.0.1', LEADS_PORT: String(port)},
    stdio: ['ignore', logFile ? fs.openSync(logFile, 'a') : 'ignore', 'inherit'],
  })
  running.add(child)
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child)
      resolve()
    }),
  )
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode} before it answered`)
    try {
      if ((await fetch(`${url}/healthz`)).ok) break
    } catch {
      // not listening yet
    }
    if (attempt > 300) {
      child.kill('SIGKILL')
      throw new Error('the daemon did not answer /healthz within 30 s')
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    url,
    child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}
