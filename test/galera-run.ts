/**
 * The MySQL run of the whole suite against a three-node MariaDB Galera cluster, through HAProxy
 * (single writer), as `npm run test:galera` runs it:
 *
 *   LEADS_TEST_REDIS_URL=redis://127.0.0.1:6379/15 npm run test:galera [-- <mocha arguments>]
 *
 * Starts the cluster of test/helpers/galera.ts on loopback from port 4671 (the topology suite's
 * is 4571, so both can run at once; LEADS_GALERA_BASE_PORT picks another), creates the database
 * `leads_test` through HAProxy, runs mocha with the project's configuration and
 * LEADS_TEST_MYSQL_URL pointing at HAProxy (so every test file and the sharding check at the end
 * run as in CI's MySQL run, the SQLite run beside it), and stops the cluster and removes its
 * directory when mocha ends, when it fails to start, and on SIGINT or SIGTERM. Mocha's
 * arguments pass through: `-- --grep 'leads status'` narrows the run (a spec file named here
 * would be added to the configuration's, not replace them). Run as root: the nodes run as `mysql`
 * over directories this run makes. Ends with the line `on Galera: N passed, N failed` and
 * mocha's exit code.
 */
import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import mysql from 'mysql2/promise'

import {GaleraCluster} from './helpers/galera.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const DATABASE = 'leads_test'
const basePort = Number(process.env['LEADS_GALERA_BASE_PORT'] ?? 4671)
const redisUrl = process.env['LEADS_TEST_REDIS_URL']
if (!redisUrl) {
  console.error('LEADS_TEST_REDIS_URL is not set: name a Redis database the run may empty, e.g. redis://127.0.0.1:6379/15')
  process.exit(2)
}
const taken = await GaleraCluster.portsInUse(basePort)
if (taken.length > 0) {
  console.error(`ports ${taken.join(', ')} are taken: another cluster runs from ${basePort}; set LEADS_GALERA_BASE_PORT to another base (30 apart)`)
  process.exit(2)
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-test-galera-'))
let cluster: GaleraCluster | null = null
let mocha: ReturnType<typeof spawn> | null = null
const killEverythingNow = () => {
  if (mocha && mocha.exitCode === null) mocha.kill('SIGKILL')
  cluster?.killAllNow()
  fs.rmSync(dir, {recursive: true, force: true})
}
process.once('exit', killEverythingNow)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping the suite and the cluster`)
    // Mocha stops its own children (daemons, servers) on the signal; it gets a moment to.
    if (mocha && mocha.exitCode === null) mocha.kill(signal)
    setTimeout(() => process.exit(130), 3000).unref()
    mocha?.once('exit', () => process.exit(130))
    if (!mocha) process.exit(130)
  })
}

let code = 1
let summary = ''
try {
  const started = performance.now()
  console.log(`starting three Galera nodes and HAProxy on loopback (ports from ${basePort}) in ${dir}`)
  cluster = await GaleraCluster.start(dir, {basePort})
  const admin = await mysql.createConnection({uri: cluster.url})
  await admin.query(`CREATE DATABASE ${DATABASE} CHARACTER SET utf8mb4`)
  await admin.end()
  console.log(`cluster Synced and HAProxy at ${cluster.url} in ${((performance.now() - started) / 1000).toFixed(0)} s; running the suite`)

  const output: string[] = []
  mocha = spawn(process.execPath, [path.join(ROOT, 'node_modules/mocha/bin/mocha.js'), ...process.argv.slice(2)], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: 'test/fixtures/tls/ca.pem',
      LEADS_TEST_MYSQL_URL: `${cluster.url}/${DATABASE}`,
      LEADS_TEST_REDIS_URL: redisUrl,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  mocha.stdout!.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk)
    output.push(chunk.toString())
  })
  code = await new Promise<number>((resolve) => mocha!.once('exit', (exitCode) => resolve(exitCode ?? 1)))
  const text = output.join('')
  const count = (word: string) => Number(text.match(new RegExp(`^ *(\\d+) ${word}`, 'm'))?.[1] ?? 0)
  summary = `on Galera: ${count('passing')} passed, ${count('failing')} failed`
} catch (error) {
  console.error(error)
  summary = 'on Galera: 0 passed, 1 failed (the cluster did not start)'
} finally {
  await cluster?.stop().catch(() => undefined)
  cluster = null
  fs.rmSync(dir, {recursive: true, force: true})
}
console.log(summary)
process.exit(code)
