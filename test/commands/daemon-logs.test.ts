import {spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {CLI, startCliAtTerminal} from '../helpers/cli.js'
import {freePort, waitUntil} from '../helpers/local-servers.js'

const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g

/** `npm start` (leads daemon) logs for people at a terminal and JSON lines anywhere else, as pino users expect. */
describe('the daemon log', function () {
  let dir: string
  const envFor = async (name: string) => ({
    LEADS_PORT: String(await freePort()),
    LEADS_DATABASE_URL: `sqlite://${path.join(dir, `${name}.db`)}`,
    LEADS_MASTER_KEY: 'ab'.repeat(32),
  })

  before(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-logs-'))
  })
  after(function () {
    fs.rmSync(dir, {recursive: true, force: true})
  })

  it('is readable lines at a terminal: time, level, message, fields; no JSON', async function () {
    this.timeout(30_000)
    const env = await envFor('terminal')
    const terminal = startCliAtTerminal(['daemon'], env)
    const shown = () => terminal.shown().replace(ANSI, '')
    await waitUntil(() => shown().includes('listening'), 'the daemon to listen', 20_000)
    expect((await fetch(`http://127.0.0.1:${env.LEADS_PORT}/api/agents/crm/leads`)).status).to.equal(401)
    await waitUntil(() => /INFO: request\n(\s+\w+: .*\n)*\s+path: "\/api\/agents\/crm\/leads"/.test(shown()), 'the request log line', 20_000)
    // Ctrl-C, then the keyboard closed only once the daemon has stopped: closing it first could end the terminal before the daemon.
    terminal.type('\u0003')
    await waitUntil(() => shown().includes('INFO: stopped'), 'the daemon to stop', 20_000)
    terminal.type('', {last: true})
    expect((await terminal.exited).code).to.equal(0)
    const lines = shown().split('\n')
    expect(lines.find((line) => line.includes('INFO: listening'))).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening$/)
    expect(shown()).to.match(/INFO: request\n(\s+\w+: .*\n)*\s+status: 401\n/)
    expect(lines.filter((line) => line.trim().startsWith('{"level"'))).to.deep.equal([])
  })

  it('is JSON lines into a pipe', async function () {
    this.timeout(30_000)
    const env = await envFor('pipe')
    const child = spawn(process.execPath, [CLI, 'daemon'], {env: {...process.env, ...env}, stdio: ['ignore', 'pipe', 'ignore']})
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    try {
      await waitUntil(() => output.includes('"listening"'), 'the daemon to listen', 20_000)
      const listening = JSON.parse(output.split('\n').find((line) => line.includes('"listening"'))!)
      expect(listening).to.include({level: 30, msg: 'listening', service: 'leads'})
    } finally {
      child.kill()
    }
  })
})
