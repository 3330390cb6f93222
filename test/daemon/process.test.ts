import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../src/config/config.js'
import {createDb} from '../../src/db/knex.js'
import {createServices} from '../../src/services.js'
import {CLI} from '../helpers/cli.js'

interface DaemonProcess {
  child: ChildProcess
  url: string
  stdout: () => string
  exited: Promise<number | null>
}

/** Starts `leads daemon` as its own process on a fresh embedded store and waits until it listens. */
async function spawnDaemon(dir: string, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const child = spawn(process.execPath, [CLI, 'daemon'], {
    cwd: dir,
    env: {PATH: process.env['PATH'], LEADS_PORT: '0', ...env},
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

  it('finishes the creates in flight on SIGTERM, writes none by halves, and a retry with the same keys completes the rest once', async function () {
    this.timeout(60_000)
    // No worker traffic matters here: the webhook only makes every create write an event and a delivery.
    const env = {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost', LEADS_LOG_LEVEL: 'info'}
    let daemon = await spawnDaemon(dir, env)
    const services = await createServices(loadConfig(env, dir))
    const customer = await services.customers.create({name: 'Burst'})
    const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
    await services.webhooks.create(customer.id, {url: 'https://localhost:9/hooks', event_types: ['lead.created']})
    await services.close()

    const TOTAL = 300
    const keys = Array.from({length: TOTAL}, (_, i) => `burst-${i}`)
    const send = (url: string, i: number) =>
      fetch(`${url}/api/agents/crm/leads`, {
        method: 'POST',
        headers: {authorization: `Bearer ${token}`, 'x-customer-id': customer.id, 'content-type': 'application/json', 'idempotency-key': keys[i]!},
        body: JSON.stringify({contact_name: `Burst ${i}`, contact_email: `burst${i}@example.org`}),
      }).then(
        async (response) => ({i, status: response.status, body: (await response.json()) as {lead?: {id: string}}}),
        () => ({i, status: 0, body: {}}),
      )
    // 32 clients at once; SIGTERM once a third of the answers are in.
    const outcomes: Array<{i: number; status: number; body: {lead?: {id: string}}}> = []
    let next = 0
    let signalled = false
    await Promise.all(
      Array.from({length: 32}, async () => {
        while (next < TOTAL) {
          const outcome = await send(daemon.url, next++)
          outcomes.push(outcome)
          if (!signalled && outcomes.length >= TOTAL / 3) {
            signalled = true
            daemon.child.kill('SIGTERM')
          }
        }
      }),
    )
    expect(await daemon.exited, `the daemon's log:\n${daemon.stdout().slice(-3000)}`).to.equal(0)
    // The clients' keep-alive connections, answered after the signal, were closed as they went idle, not held to the drain time.
    expect(daemon.stdout()).to.not.include('closing the connections still open at the drain time')
    const answered = outcomes.filter((outcome) => outcome.status === 201)
    expect(
      outcomes.every((outcome) => outcome.status === 201 || outcome.status === 0),
      JSON.stringify(outcomes.filter((o) => o.status !== 201 && o.status !== 0).slice(0, 3)),
    ).to.equal(true)
    expect(answered.length).to.be.at.least(TOTAL / 3)

    // Nothing half-written: every lead stored has its event and its delivery, and every 201 is stored.
    const check = createDb(loadConfig(env, dir).database)
    try {
      const leads = (await check('leads').where({customer_id: customer.id}).pluck('id')) as string[]
      for (const outcome of answered) expect(leads).to.include(outcome.body.lead!.id)
      expect(await check('events').where({customer_id: customer.id}).count({n: '*'})).to.deep.equal([{n: leads.length}])
      expect(await check('deliveries').where({customer_id: customer.id}).count({n: '*'})).to.deep.equal([{n: leads.length}])
    } finally {
      await check.destroy()
    }

    // The clients retry what got no answer, with the same keys, against the daemon started again.
    daemon = await spawnDaemon(dir, env)
    const retried = await Promise.all(outcomes.filter((outcome) => outcome.status !== 201).map((outcome) => send(daemon.url, outcome.i)))
    expect(retried.every((outcome) => outcome.status === 201)).to.equal(true)
    daemon.child.kill('SIGTERM')
    expect(await daemon.exited).to.equal(0)
    const after = createDb(loadConfig(env, dir).database)
    try {
      expect(await after('leads').where({customer_id: customer.id}).count({n: '*'})).to.deep.equal([{n: TOTAL}])
      expect(await after('events').where({customer_id: customer.id}).count({n: '*'})).to.deep.equal([{n: TOTAL}])
    } finally {
      await after.destroy()
    }
  })
})
