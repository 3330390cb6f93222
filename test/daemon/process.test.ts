import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {CLI} from '../helpers/cli.js'

interface DaemonProcess {
  child: ChildProcess
  url: string
  stdout: () => string
  exited: Promise<number | null>
}

/** Starts `leads daemon` as its own process on a fresh embedded store and waits until it listens. */
async function spawnDaemon(dir: string): Promise<DaemonProcess> {
  const child = spawn(process.execPath, [CLI, 'daemon'], {
    cwd: dir,
    env: {PATH: process.env['PATH'], LEADS_PORT: '0'},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /"url":"(http:\/\/[^"]+)"/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.once('exit', (code) => reject(new Error(`daemon exited ${code} before listening: ${out}`)))
  })
  return {child, url, stdout: () => out, exited}
}

describe('leads daemon process', function () {
  let dir: string

  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-daemon-'))
  })
  afterEach(function () {
    fs.rmSync(dir, {recursive: true, force: true})
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`migrates the embedded store, serves, and exits 0 on ${signal}`, async function () {
      const daemon = await spawnDaemon(dir)
      const health = await fetch(`${daemon.url}/healthz`)
      expect(health.status).to.equal(200)
      expect(fs.existsSync(path.join(dir, '.leads/leads.db'))).to.equal(true)
      expect(fs.statSync(path.join(dir, '.leads/master.key')).mode & 0o777).to.equal(0o600)
      daemon.child.kill(signal)
      expect(await daemon.exited).to.equal(0)
      expect(daemon.stdout()).to.include('"msg":"stopped"')
    })
  }
})
