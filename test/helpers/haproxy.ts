// A real load balancer for the topology tests: HAProxy from Debian's packages, installed on first
// use, started on loopback with a configuration of the test's own.
import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

import {ensureCommand} from './debian-package.js'
import {freePort, waitUntil} from './local-servers.js'

export interface Balancer {
  /** Where clients send their requests. */
  readonly url: string
  /** HAProxy's statistics as CSV, one row per backend server (requests each daemon was given). */
  stats(): Promise<Array<{server: string; status: string; requests: number}>>
  stop(): Promise<void>
}

/** The haproxy binary, installed with apt-get when this machine lacks it (a fresh CI machine does). */
export function ensureHaproxy(): string {
  return ensureCommand('haproxy')
}

/**
 * HAProxy in front of `backends` (loopback ports): round robin, health checks on /readyz every
 * 250 ms (a dead daemon leaves the rotation within a second), X-Forwarded-For appended, and a
 * connection that fails before the request is sent retried on another daemon. A request already
 * sent is never retried by the balancer: a create is not idempotent without its key, so that is
 * the client's decision.
 */
export async function startHaproxy(dir: string, backends: number[]): Promise<Balancer> {
  const binary = ensureHaproxy()
  const port = await freePort()
  const statsPort = await freePort()
  const config = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout http-keep-alive 60s',
    '  retries 3',
    '  option redispatch',
    '  option forwardfor',
    'frontend api',
    `  bind 127.0.0.1:${port}`,
    '  default_backend daemons',
    'backend daemons',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    // The daemons trust 127.0.0.1 as their proxy: the balancer connects from it, whatever the client's address.
    '  default-server inter 250ms fall 2 rise 2 source 127.0.0.1',
    ...backends.map((backend, index) => `  server api${index} 127.0.0.1:${backend} check`),
    'listen stats',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n')
  const file = path.join(dir, 'haproxy.cfg')
  fs.writeFileSync(file, config)
  const child: ChildProcess = spawn(binary, ['-db', '-f', file], {stdio: ['ignore', 'ignore', 'pipe']})
  let errors = ''
  child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()))
  const url = `http://127.0.0.1:${port}`
  await waitUntil(
    async () => {
      if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}: ${errors}`)
      return fetch(`${url}/healthz`).then(
        (response) => response.ok,
        () => false,
      )
    },
    'haproxy to answer',
    15_000,
  )
  return {
    url,
    async stats() {
      const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text()
      const [header, ...rows] = csv.trim().split('\n')
      const columns = header!.replace(/^# /, '').split(',')
      const at = (name: string) => columns.indexOf(name)
      return rows
        .map((row) => row.split(','))
        .filter((cells) => cells[at('pxname')] === 'daemons' && /^api\d+$/.test(cells[at('svname')] ?? ''))
        .map((cells) => ({server: cells[at('svname')]!, status: cells[at('status')]!, requests: Number(cells[at('req_tot')] || cells[at('stot')])}))
    },
    async stop() {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    },
  }
}
