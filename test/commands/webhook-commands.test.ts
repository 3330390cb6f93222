import {execFile, spawn} from 'node:child_process'

import {expect} from 'chai'

import {loadConfig} from '../../src/config/config.js'
import {createLogger} from '../../src/log/logger.js'
import {createServices} from '../../src/services.js'
import {SECRET_OVERLAP_MS} from '../../src/webhooks/signing-secrets.js'
import {postJson} from '../helpers/api.js'
import {backends, forEachBackend} from '../helpers/backends.js'
import {CLI, runCli, runCliAtWidth, runCliJson} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {waitUntil} from '../helpers/local-servers.js'
import {Receiver} from '../helpers/receiver.js'
import {verifyDelivery} from '../helpers/verify-signature.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

/** Waits for the running daemon's worker to take the delivery to `status`. */
async function deliveryReaches(daemon: TestDaemon, deliveryId: string, status: string): Promise<void> {
  await waitUntil(async () => (await daemon.services.deliveries.show(deliveryId)).status === status, `delivery ${deliveryId} to be ${status}`)
}

describe('webhook and delivery commands', function () {
  let daemon: TestDaemon
  let receiver: Receiver
  let tenant: TestTenant
  let webhookId: string
  let deliveryId: string
  const backend = backends()[0]!
  const env = () => ({...backend.env, LEADS_MASTER_KEY: 'ab'.repeat(32)})

  before(async function () {
    receiver = await new Receiver().start()
    daemon = await startTestDaemon(
      backend,
      {worker: {baseDelayMs: 5, maxDelayMs: 20, sweepIntervalMs: 100, redispatchAfterMs: 200}},
      {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'},
    )
    tenant = await newTenant(daemon.services)
    webhookId = (
      await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0, description: 'cli test'})
    ).webhook.id
    receiver.reply({status: 500, body: 'boom'})
    const created = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Cli'})
    await receiver.waitFor(1)
    const [row] = await daemon.db('deliveries').where({customer_id: tenant.customer.id, webhook_id: webhookId})
    deliveryId = row.id
    await deliveryReaches(daemon, deliveryId, 'failed')
    expect(created.status).to.equal(201)
  })
  after(async function () {
    await daemon.stop()
    await receiver.stop()
  })

  it('webhooks list shows state and streak, never a secret', async function () {
    const output = await runCliJson(['webhooks', 'list', '--customer', tenant.customer.id], env())
    expect(output.webhooks).to.have.length(1)
    expect(output.webhooks[0]).to.include({id: webhookId, is_active: true, consecutive_failures: 1, description: 'cli test'})
    expect(JSON.stringify(output)).not.to.include('svc_whsec_')
  })

  it('webhooks inspect reports config, health and each attempt, as JSON and as text', async function () {
    const output = await runCliJson(['webhooks', 'inspect', webhookId], env())
    expect(output.webhook.id).to.equal(webhookId)
    expect(output.health).to.include({window: 100, success_rate: 0, delivered: 0, failed: 1, failing: 0, consecutive_failures: 1, last_status: '500'})
    expect(output.recent[0]).to.include({id: deliveryId, status: 'failed'})
    expect(output.recent[0].attempts[0]).to.include({attempt: 1, status_code: 500, outcome: 'final', response_snippet: 'boom'})
    const text = await runCli(['webhooks', 'inspect', webhookId], env())
    expect(text.stdout).to.include(`${webhookId}  active`)
    expect(text.stdout).to.include('health:    success 0% of the last 100 deliveries (0 ok, 1 failed, 0 failing now), streak 1, last 500')
    expect(text.stdout).to.match(new RegExp(`failed +${deliveryId}`))
  })

  it('webhooks inspect at a terminal counts retries in words: 1 retry, 2 retries', async function () {
    try {
      for (const [attempts, words] of [
        [1, '1 retry'],
        [2, '2 retries'],
      ] as const) {
        await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).update({retry_attempts: attempts})
        const shown = await runCliAtWidth(['webhooks', 'inspect', webhookId], {...env(), NO_COLOR: '1'}, 160)
        expect(shown.code, shown.stdout).to.equal(0)
        expect(shown.stdout).to.match(new RegExp(`timeout \\d+s · ${words}\\b`))
      }
    } finally {
      await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).update({retry_attempts: 0})
    }
  })

  it('shows a delivery with its event, lead, payload and next attempt, and counts a delivery still retrying as failing', async function () {
    const shown = await runCliJson(['deliveries', 'show', deliveryId], env())
    expect(shown).to.include({event_type: 'lead.created', next_attempt_at: null})
    expect(shown.lead_id).to.match(/^[0-9a-f-]{36}$/)
    expect(shown.payload).to.include({id: shown.lead_id, contact_name: 'Cli'})
    const text = await runCli(['deliveries', 'show', deliveryId], env())
    expect(text.stdout).to.include(`event:        lead.created ${shown.event_id}\nlead:         ${shown.lead_id}\n`)
    // At an 80-column terminal no line wraps but the payload's.
    for (const line of text.stdout.split('payload (lead):')[0]!.split('\n')) expect(line.length, line).to.be.at.most(80)
    expect(text.stdout).to.match(/payload \(lead\):\n\{\n {2}"id": /)
    // The same delivery, as if its failed attempt were being retried.
    const due = Date.now() + 60_000
    await daemon.db('deliveries').where({customer_id: tenant.customer.id, id: deliveryId}).update({status: 'pending', next_attempt_at: due, completed_at: null})
    try {
      const inspected = await runCliJson(['webhooks', 'inspect', webhookId, '--limit', '1'], env())
      expect(inspected.health).to.include({window: 100, delivered: 0, failed: 0, failing: 1, success_rate: 0})
      expect(inspected.recent[0].next_attempt_at).to.equal(new Date(due).toISOString())
    } finally {
      await daemon.db('deliveries').where({customer_id: tenant.customer.id, id: deliveryId}).update({status: 'failed', completed_at: Date.now()})
    }
  })

  it("prints a customer's description and a receiver's answer inert: no escape sequence reaches the terminal", async function () {
    const osc = 'x\u001b]0;owned\u0007\u001b]52;c;cm0gLXJmIH4=\u0007\u009b2J\u001b[31m'
    await daemon
      .db('webhooks')
      .where({customer_id: tenant.customer.id, id: webhookId})
      .update({description: `desc ${osc}`})
    await daemon
      .db('delivery_attempts')
      .where({delivery_id: deliveryId})
      .update({response_snippet: `body ${osc}`})
    try {
      const inspected = await runCli(['webhooks', 'inspect', webhookId], env())
      const shown = await runCli(['deliveries', 'show', deliveryId], env())
      for (const output of [inspected.stdout, shown.stdout]) {
        expect(output).to.not.match(/[\u001b\u0007\u009b]/)
        expect(output).to.include('x^[]0;owned^G^[]52;c;cm0gLXJmIH4=^GM-^[2J^[[31m')
      }
      expect(inspected.stdout).to.include('about:     desc x^[]0;owned')
      expect(shown.stdout).to.include('body x^[]0;owned')
      // JSON keeps the data, with what a terminal acts on escaped.
      const json = await runCli(['webhooks', 'inspect', webhookId, '--json'], env())
      expect(json.stdout).to.not.match(/[\u001b\u0007\u009b]/)
      expect(JSON.parse(json.stdout).webhook.description).to.equal(`desc ${osc}`)
    } finally {
      await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).update({description: 'cli test'})
      await daemon.db('delivery_attempts').where({delivery_id: deliveryId}).update({response_snippet: 'boom'})
    }
  })

  it('deliveries list and show report the delivery with its attempts', async function () {
    const listed = await runCliJson(['deliveries', 'list', '--webhook', webhookId, '--status', 'failed'], env())
    expect(listed.deliveries.map((d: {id: string}) => d.id)).to.deep.equal([deliveryId])
    const shown = await runCliJson(['deliveries', 'show', deliveryId], env())
    expect(shown).to.include({id: deliveryId, status: 'failed', last_error: 'HTTP 500', webhook_id: webhookId})
    expect(shown.attempts).to.have.length(1)
  })

  it('deliveries redeliver --webhook --failed queues it again, delivered by the running daemon', async function () {
    const before = receiver.requests.length
    const unconfirmed = await runCli(['deliveries', 'redeliver', '--webhook', webhookId, '--failed'], env())
    expect(unconfirmed.code).to.equal(1)
    expect(unconfirmed.stderr).to.include('add --yes to confirm')
    expect((await daemon.services.deliveries.show(deliveryId)).status).to.equal('failed')
    const output = await runCliJson(['deliveries', 'redeliver', '--webhook', webhookId, '--failed', '--yes'], env())
    expect(output).to.deep.equal({redelivered: [deliveryId]})
    await receiver.waitFor(before + 1)
    expect(receiver.requests.at(-1)!.headers['x-service-delivery']).to.equal(deliveryId)
    await deliveryReaches(daemon, deliveryId, 'succeeded')
    expect((await runCliJson(['deliveries', 'show', deliveryId], env())).status).to.equal('succeeded')
    // A redelivered delivery keeps its earlier attempts: attempts_made counts them all, as the
    // attempts listed and the ATTEMPTS column do; the attempts of this round are named apart.
    const shown = await runCliJson(['deliveries', 'show', deliveryId], env())
    expect(shown.attempts).to.have.length(2)
    expect(shown).to.include({attempts_made: 2, attempts_since_queued: 1})
    const listed = (await runCliJson(['deliveries', 'list', '--webhook', webhookId], env())).deliveries.find((d: {id: string}) => d.id === deliveryId)
    expect(listed).to.include({attempts_made: 2, attempts_since_queued: 1})
    const inspected = (await runCliJson(['webhooks', 'inspect', webhookId], env())).recent.find((d: {id: string}) => d.id === deliveryId)
    expect(inspected).to.include({attempts_made: 2, attempts_since_queued: 1})
    const table = await runCli(['deliveries', 'list', '--webhook', webhookId, '--columns', 'id,attempts'], env())
    expect(table.stdout).to.match(new RegExp(`${deliveryId.slice(0, 8)}\\S*\\s+2\\s*$`, 'm'))
  })

  it('refuses to seal or open a webhook secret under another LEADS_MASTER_KEY than the database adopted, changing nothing', async function () {
    const other = {...env(), LEADS_MASTER_KEY: 'cd'.repeat(32)}
    const refusal =
      "Error: LEADS_MASTER_KEY is not the key this database's webhook secrets are sealed with (hint: use the key the daemons run with; if that key is lost, `leads maintenance adopt-master-key --yes`, then rotate every webhook secret (docs/operations.md))\n"
    const sealed = await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).first('secret_ciphertext')
    const before = receiver.requests.length
    for (const command of [
      ['webhooks', 'test', webhookId],
      ['webhooks', 'rotate-secret', webhookId, '--yes'],
      ['webhooks', 'create', '--customer', tenant.customer.id, '--url', receiver.url, '--event', 'lead.created'],
    ]) {
      const result = await runCli(command, {...other, LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
      expect(result.code, command.join(' ')).to.equal(1)
      expect(result.stdout, command.join(' ')).to.equal('')
      expect(result.stderr, command.join(' ')).to.equal(refusal)
    }
    // Nothing sealed under the other key, nothing sent: the secret still opens in the daemons.
    expect(await daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).first('secret_ciphertext')).to.deep.equal(sealed)
    expect(await daemon.db('webhooks').where({customer_id: tenant.customer.id}).count({n: '*'})).to.deep.equal([{n: 1}])
    expect(receiver.requests.length).to.equal(before)
    // Commands that touch no webhook run under any key.
    expect((await runCli(['keys', 'list', '--customer', tenant.customer.id], other)).code).to.equal(0)
  })

  it('a daemon under another LEADS_MASTER_KEY than the database adopted refuses to start, naming the variable', async function () {
    const config = loadConfig({...env(), LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_LOG_LEVEL: 'silent'})
    const started = await createServices(config, {logger: createLogger('silent')}).then(
      async (services) => {
        await services.close()
        return null
      },
      (error: unknown) => error as Error,
    )
    expect(started?.message).to.equal("LEADS_MASTER_KEY is not the key this database's webhook secrets are sealed with")
  })

  it('the daemon process under another LEADS_MASTER_KEY exits 1 with the one line, instead of hanging on its open connections', async function () {
    const started = Date.now()
    const result = await new Promise<{code: number | null; signal: string | null; stderr: string}>((resolve) => {
      // Killed after 15 s, so a daemon that hangs fails the test and is not left behind.
      const child = execFile(
        process.execPath,
        [CLI, 'daemon'],
        {
          env: {...process.env, ...env(), LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_PORT: '0', LEADS_LOG_LEVEL: 'silent'},
          timeout: 15_000,
          killSignal: 'SIGKILL',
        },
        (_error, _stdout, stderr) => resolve({code: child.exitCode, signal: child.signalCode, stderr}),
      )
    })
    expect(result.signal, 'the daemon had to be killed').to.equal(null)
    expect(result.code).to.equal(1)
    expect(result.stderr).to.match(/^Error: LEADS_MASTER_KEY is not the key this database's webhook secrets are sealed with \(hint: [^\n]*\)\n$/)
    expect(Date.now() - started).to.be.below(15_000)
  })

  it('maintenance adopt-master-key makes another key the one secrets are sealed with, and asks first', async function () {
    const other = {...env(), LEADS_MASTER_KEY: 'cd'.repeat(32)}
    const unconfirmed = await runCli(['maintenance', 'adopt-master-key'], other)
    expect(unconfirmed.code).to.equal(1)
    expect(unconfirmed.stderr).to.match(/add --yes to confirm/)
    try {
      const adopted = await runCli(['maintenance', 'adopt-master-key', '--yes'], other)
      expect(adopted.code, adopted.stderr).to.equal(0)
      expect(adopted.stdout).to.match(/^Adopted this LEADS_MASTER_KEY/)
      // Now the old key is the other one.
      expect((await runCli(['webhooks', 'test', webhookId], env())).stderr).to.match(/^Error: LEADS_MASTER_KEY is not the key/)
      // The secret sealed under the lost key no longer opens: the operator rotates it under the adopted one.
      expect((await runCli(['webhooks', 'test', webhookId], other)).stderr).to.match(/does not open with this LEADS_MASTER_KEY/)
    } finally {
      expect((await runCli(['maintenance', 'adopt-master-key', '--yes'], env())).code).to.equal(0)
    }
    expect((await runCli(['webhooks', 'list', '--customer', tenant.customer.id], env())).code).to.equal(0)
  })

  it('after adopt-master-key, rotate-secret says the old secret signs nothing (it was sealed under the lost key), not that it overlaps for 24 h', async function () {
    const other = {...env(), LEADS_MASTER_KEY: 'cd'.repeat(32)}
    const id = (await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})).webhook.id
    try {
      expect((await runCli(['maintenance', 'adopt-master-key', '--yes'], other)).code).to.equal(0)
      const first = await runCli(['webhooks', 'rotate-secret', id, '--yes'], other)
      expect(first.code, first.stderr).to.equal(0)
      expect(first.stdout).to.match(
        /^old secret: sealed under a master key this database no longer uses, so it signs nothing: the receiver rejects deliveries until it verifies with the new secret$/m,
      )
      expect(first.stdout).not.to.include('X-Service-Signature-Previous until')
      // The secret it retired now opens, so the next rotation overlaps as usual.
      const second = await runCliJson(['webhooks', 'rotate-secret', id, '--yes'], other)
      expect(Date.parse(second.previous_secret_until) - Date.now()).to.be.within(SECRET_OVERLAP_MS - 60_000, SECRET_OVERLAP_MS)
      const third = await runCliJson(['webhooks', 'rotate-secret', id, '--yes'], other)
      expect(third.previous_secret_until).to.be.a('string')
    } finally {
      expect((await runCli(['maintenance', 'adopt-master-key', '--yes'], env())).code).to.equal(0)
      await daemon.services.webhooks.delete(tenant.customer.id, id)
    }
  })

  it('webhooks test still sends to a disabled webhook and says it is disabled and how to enable it', async function () {
    const id = (await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})).webhook.id
    const cliEnv = {...env(), LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
    try {
      expect((await runCli(['webhooks', 'disable', id], cliEnv)).code).to.equal(0)
      receiver.reply({status: 204})
      const before = receiver.requests.length
      const tested = await runCli(['webhooks', 'test', id], cliEnv)
      expect(tested.code, tested.stderr).to.equal(0)
      expect(receiver.requests.length).to.equal(before + 1)
      expect(tested.stdout).to.include('→ HTTP 204')
      expect(tested.stderr).to.include(`webhook ${id} is disabled (disabled by an operator)`)
      expect(tested.stderr).to.include(`leads webhooks enable ${id}`)
      receiver.reply({status: 204})
      const json = await runCliJson(['webhooks', 'test', id], cliEnv)
      expect(json).to.include({webhook_id: id, is_active: false, disabled_reason: 'disabled by an operator', status_code: 204})
      // An active webhook's test says nothing of the kind.
      expect((await runCli(['webhooks', 'enable', id], cliEnv)).code).to.equal(0)
      receiver.reply({status: 204})
      const active = await runCli(['webhooks', 'test', id], cliEnv)
      expect(active.stderr).not.to.include('disabled')
      receiver.reply({status: 204})
      expect(await runCliJson(['webhooks', 'test', id], cliEnv)).to.include({is_active: true, disabled_reason: null})
      // A receiver that refuses: under --json the result on stdout, the failure on stderr as every --json failure, exit 1.
      receiver.reply({status: 500})
      const refused = await runCli(['webhooks', 'test', id, '--json'], cliEnv)
      expect(refused.code).to.equal(1)
      expect(JSON.parse(refused.stdout)).to.include({webhook_id: id, status_code: 500})
      expect(JSON.parse(refused.stderr)).to.deep.equal({
        error: {
          type: 'invalid_request_error',
          code: 400,
          message: 'the receiver did not acknowledge the test event (HTTP 500)',
          hint: 'it must answer 2xx; see status_code and response_snippet',
        },
        exit_code: 1,
      })
    } finally {
      await daemon.services.webhooks.delete(tenant.customer.id, id)
    }
  })

  it('after adopt-master-key, rotate-secret --json says previous_secret_until null', async function () {
    const other = {...env(), LEADS_MASTER_KEY: 'cd'.repeat(32)}
    const id = (await daemon.services.webhooks.create(tenant.customer.id, {url: receiver.url, event_types: ['lead.created']})).webhook.id
    try {
      expect((await runCli(['maintenance', 'adopt-master-key', '--yes'], other)).code).to.equal(0)
      const rotated = await runCliJson(['webhooks', 'rotate-secret', id, '--yes'], other)
      expect(rotated.previous_secret_until).to.equal(null)
    } finally {
      expect((await runCli(['maintenance', 'adopt-master-key', '--yes'], env())).code).to.equal(0)
      await daemon.services.webhooks.delete(tenant.customer.id, id)
    }
  })

  it('webhooks create, test, rotate-secret and delete act for the customer from the terminal', async function () {
    const cliEnv = {...env(), LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'}
    const created = await runCliJson(
      ['webhooks', 'create', '--customer', tenant.customer.id, '--url', receiver.url, '--description', 'from the CLI', '--retry-attempts', '2'],
      cliEnv,
    )
    expect(created.secret).to.match(/^svc_whsec_[0-9a-f]+$/)
    expect(created.webhook).to.include({customer_id: tenant.customer.id, url: receiver.url, description: 'from the CLI', retry_attempts: 2, is_active: true})
    const id = created.webhook.id as string

    receiver.reply({status: 204})
    const before = receiver.requests.length
    const tested = await runCli(['webhooks', 'test', id], cliEnv)
    expect(tested.code, tested.stderr).to.equal(0)
    expect(tested.stdout).to.match(new RegExp(`^POST ${receiver.url} \\(X-Service-Delivery [0-9a-f-]{36}\\) → HTTP 204 in \\d+ ms`))
    const sample = receiver.requests[before]!
    expect(verifyDelivery(sample, created.secret)).to.equal(true)
    const body = JSON.parse(sample.rawBody.toString())
    expect(Object.keys(body)).to.deep.equal(['event', 'delivered_at', 'lead'])
    expect(body.event).to.equal('lead.created')
    expect(body.lead.contact_name).to.equal('Test Lead (sent by leads webhooks test)')
    // Nothing is recorded for a test.
    expect(await daemon.db('deliveries').where({customer_id: tenant.customer.id, webhook_id: id})).to.deep.equal([])

    const rotated = await runCliJson(['webhooks', 'rotate-secret', id, '--yes'], cliEnv)
    expect(rotated.secret)
      .to.match(/^svc_whsec_/)
      .and.not.equal(created.secret)
    expect(Date.parse(rotated.previous_secret_until) - Date.now()).to.be.within(SECRET_OVERLAP_MS - 60_000, SECRET_OVERLAP_MS)
    receiver.reply({status: 500, body: 'nope'})
    const failing = await runCli(['webhooks', 'test', id], cliEnv)
    expect(failing.code).to.equal(1)
    expect(failing.stdout).to.include('→ HTTP 500')
    expect(failing.stderr).to.include('the receiver did not acknowledge the test event (HTTP 500)')
    const resigned = receiver.requests.at(-1)!
    expect(verifyDelivery(resigned, rotated.secret)).to.equal(true)
    expect(verifyDelivery(resigned, created.secret)).to.equal(false)
    expect(verifyDelivery(resigned, created.secret, Date.now(), 300, 'x-service-signature-previous')).to.equal(true)
    const rotatedAgain = await runCli(['webhooks', 'rotate-secret', id, '--yes'], cliEnv)
    expect(rotatedAgain.code, rotatedAgain.stderr).to.equal(0)
    expect(rotatedAgain.stdout).to.match(
      /^old secret: still signs X-Service-Signature-Previous until \d{4}-\d\d-\d\dT[\d:.]+Z; give the receiver the new secret before then$/m,
    )

    expect((await runCli(['webhooks', 'delete', id], cliEnv)).stderr).to.include('add --yes to confirm')
    expect(await runCliJson(['webhooks', 'delete', id, '--yes'], cliEnv)).to.deep.equal({id, deleted: true})
    expect((await runCli(['webhooks', 'inspect', id], cliEnv)).stderr).to.include(`webhook ${id} does not exist`)
  })

  it('deliveries tail follows deliveries as they happen: queued, then each attempt with its answer, and stops on Ctrl-C', async function () {
    const tail = spawn(process.execPath, [CLI, 'deliveries', 'tail', '--webhook', webhookId, '--interval', '200ms'], {
      env: {...process.env, ...env(), NODE_EXTRA_CA_CERTS: ''},
    })
    let output = ''
    tail.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => tail.on('exit', (code) => resolve(code)))
    const lines = (leadId: string) =>
      output
        .trim()
        .split('\n')
        .filter((line) => line.includes(leadId))
        .map((line) => line.split('\t'))
    const attemptShown = (leadId: string) => waitUntil(() => lines(leadId).some((cells) => cells[5] === '1'), `the attempt for lead ${leadId} in the tail`)
    try {
      // The tail is following once it has shown an attempt (this one's, within its look-back):
      // only then does the delivery under test happen.
      const first = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Before the tailed one'})
      await attemptShown(first.body.lead.id as string)
      // The webhook makes one attempt (retry_attempts 0): queued, then its final answer.
      receiver.reply({status: 503, body: 'busy'})
      const created = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: 'Tailed'})
      const leadId = created.body.lead.id as string
      await attemptShown(leadId)
      const seen = lines(leadId)
      expect(seen.map((cells) => [cells[5], cells[6], cells[8]])).to.deep.equal([
        ['0', 'queued', 'queued'],
        ['1', '503', 'final'],
      ])
      expect(new Set(seen.map((cells) => cells[1])).size).to.equal(1)
      expect(seen[1]!.slice(2, 5)).to.deep.equal([webhookId, 'lead.created', leadId])
      expect(Number(seen[1]![7])).to.be.at.least(0)
    } finally {
      tail.kill('SIGINT')
    }
    expect(await exited).to.equal(0)
  })

  it('deliveries redeliver refuses --since without --failed as a usage error, instead of redelivering the named ids whatever their time', async function () {
    const before = await daemon.services.deliveries.show(deliveryId)
    const result = await runCli(['deliveries', 'redeliver', deliveryId, '--since', '2h'], env())
    expect(result.code).to.equal(2)
    expect(result.stderr).to.include('--failed')
    expect(await daemon.services.deliveries.show(deliveryId)).to.deep.equal(before)
  })

  it('deliveries show and redeliver take a delivery id in capitals as the same id', async function () {
    const shown = await runCliJson(['deliveries', 'show', deliveryId.toUpperCase()], env())
    expect(shown.id).to.equal(deliveryId)
    const redelivered = await runCliJson(['deliveries', 'redeliver', deliveryId.toUpperCase()], env())
    expect(redelivered).to.deep.equal({redelivered: [deliveryId]})
  })

  it('deliveries redeliver refuses the deliveries of a disabled or deleted webhook, which would be cancelled, not sent, and keeps them failed', async function () {
    const owner = await newTenant(daemon.services)
    // A receiver of its own that is always down: a reply queued on the shared one can be taken by
    // another test's delivery still under way, and this one would then succeed.
    const down = await new Receiver().start()
    after(() => down.stop())
    down.fallback = {status: 500, body: 'down'}
    const {webhook} = await daemon.services.webhooks.create(owner.customer.id, {url: down.url, event_types: ['lead.created'], retry_attempts: 0})
    await postJson(daemon, owner, '/api/agents/crm/leads', {contact_name: 'Parked'})
    await down.waitFor(1)
    const [row] = await daemon.db('deliveries').where({customer_id: owner.customer.id, webhook_id: webhook.id})
    await deliveryReaches(daemon, row.id, 'failed')
    await runCliJson(['webhooks', 'disable', webhook.id], env())
    const disabled = `Error: webhook ${webhook.id} is disabled, and a disabled webhook's deliveries are cancelled, not sent (hint: \`leads webhooks enable ${webhook.id}\`, then redeliver)\n`
    for (const args of [
      ['deliveries', 'redeliver', row.id],
      ['deliveries', 'redeliver', '--webhook', webhook.id, '--failed', '--yes'],
    ]) {
      const refused = await runCli(args, env())
      expect(refused.code, args.join(' ')).to.equal(1)
      expect(refused.stdout, args.join(' ')).to.equal('')
      expect(refused.stderr, args.join(' ')).to.equal(disabled)
    }
    await runCliJson(['webhooks', 'delete', webhook.id, '--yes'], env())
    const deleted = await runCli(['deliveries', 'redeliver', row.id], env())
    expect(deleted.code).to.equal(1)
    expect(deleted.stderr).to.equal(`Error: delivery ${row.id} is of webhook ${webhook.id}, which was deleted: there is nowhere to send it\n`)
    expect((await daemon.services.deliveries.show(row.id)).status).to.equal('failed')
  })

  it('deliveries tail --json prints a failure as the error envelope on stderr with its exit code, as every --json command does', async function () {
    const unknown = await runCli(['deliveries', 'tail', '--json', '--webhook', 'wh_nope'], env())
    expect(unknown.code).to.equal(1)
    expect(unknown.stdout).to.equal('')
    expect(JSON.parse(unknown.stderr)).to.deep.equal({
      error: {type: 'not_found_error', code: 404, message: 'webhook wh_nope does not exist', hint: 'run `leads webhooks list`'},
      exit_code: 1,
    })
    const usage = await runCli(['deliveries', 'tail', '--json', '--rows', '0'], env())
    expect(usage.code).to.equal(2)
    expect(usage.stdout).to.equal('')
    expect(JSON.parse(usage.stderr)).to.include({exit_code: 2})
    expect(JSON.parse(usage.stderr).error).to.include({type: 'invalid_request_error', code: 400})
    const plain = await runCli(['deliveries', 'tail', '--webhook', 'wh_nope'], env())
    expect(plain.stderr).to.equal('Error: webhook wh_nope does not exist (hint: run `leads webhooks list`)\n')
  })

  it('webhooks disable and enable switch the webhook, and say so when it already was', async function () {
    expect(await runCliJson(['webhooks', 'disable', webhookId], env())).to.include({is_active: false, disabled_reason: 'disabled by an operator'})
    expect((await runCli(['webhooks', 'disable', webhookId], env())).stdout).to.equal(
      `Webhook ${webhookId} is already disabled (disabled by an operator); nothing changed.\n`,
    )
    expect(await runCliJson(['webhooks', 'enable', webhookId], env())).to.include({is_active: true, disabled_reason: null})
    expect((await runCli(['webhooks', 'enable', webhookId], env())).stdout).to.equal(`Webhook ${webhookId} is already active; nothing changed.\n`)
  })

  it('answers unknown ids and missing arguments with one line', async function () {
    const unknown = await runCli(['webhooks', 'inspect', 'wh_nope'], env())
    expect(unknown.code).to.equal(1)
    expect(unknown.stderr).to.equal('Error: webhook wh_nope does not exist (hint: run `leads webhooks list`)\n')
    // Usage errors, as oclif's own: exit 2 (the contract), one line naming what to give.
    const nothing = await runCli(['deliveries', 'redeliver'], env())
    expect(nothing.code).to.equal(2)
    expect(nothing.stderr).to.include('Error: give delivery ids, or --webhook WH_ID --failed')
    const both = await runCli(['deliveries', 'redeliver', 'd_1', '--webhook', webhookId, '--failed', '--yes'], env())
    expect(both.code).to.equal(2)
    expect(both.stderr).to.include('Error: give delivery ids or --webhook WH_ID --failed, not both')
  })

  it('refuses a --customer that is not a customer, as keys list does, rather than showing none', async function () {
    const missing = '00000000-0000-4000-8000-000000000000'
    for (const args of [
      ['webhooks', 'list', '--customer', missing],
      ['deliveries', 'tail', '--customer', missing],
    ]) {
      const result = await runCli(args, env())
      expect(result.code, args.join(' ')).to.equal(1)
      expect(result.stdout).to.equal('')
      expect(result.stderr).to.equal(`Error: customer ${missing} does not exist (hint: run \`leads customers list\`)\n`)
    }
    const typo = await runCli(['webhooks', 'list', '--customer', 'acme'], env())
    expect(typo.code).to.equal(1)
    expect(typo.stderr).to.equal('Error: customer must be a UUID, got "acme" (hint: run `leads customers list`)\n')
  })

  it("webhooks recover --since queues a webhook's failed deliveries again, delivered by the running daemon", async function () {
    const owner = await newTenant(daemon.services)
    const {webhook, secret} = await daemon.services.webhooks.create(owner.customer.id, {url: receiver.url, event_types: ['lead.created'], retry_attempts: 0})
    receiver.reply({status: 500, body: 'down'})
    const seen = receiver.requests.length
    await postJson(daemon, owner, '/api/agents/crm/leads', {contact_name: 'Recovered'})
    await receiver.waitFor(seen + 1)
    const [row] = await daemon.db('deliveries').where({customer_id: owner.customer.id, webhook_id: webhook.id})
    await deliveryReaches(daemon, row.id, 'failed')
    expect((await daemon.services.deliveries.show(row.id)).status).to.equal('failed')

    const unconfirmed = await runCli(['webhooks', 'recover', webhook.id, '--since', '1h'], env())
    expect(unconfirmed.code).to.equal(1)
    expect(unconfirmed.stderr).to.include('add --yes to confirm')
    for (const [since, message] of [
      ['8d', 'Error: since must be at most 7 days ago: '],
      ['yesterday', 'Error: since must be an ISO-8601 time like 2026-11-24T09:00:00Z, or a duration ago like 2h or 1d, got "yesterday"'],
      [new Date(Date.now() + 3_600_000).toISOString(), 'Error: since must not be in the future'],
    ] as const) {
      const refused = await runCli(['webhooks', 'recover', webhook.id, '--since', since, '--yes'], env())
      expect(refused.code, since).to.equal(1)
      expect(refused.stderr, since).to.include(message)
      expect(refused.stderr.trim().split('\n'), since).to.have.length(1)
    }
    const unknown = await runCli(['webhooks', 'recover', 'wh_nope', '--since', '1h', '--yes'], env())
    expect(unknown.stderr).to.equal('Error: webhook wh_nope does not exist (hint: run `leads webhooks list`)\n')
    expect((await daemon.services.deliveries.show(row.id)).status).to.equal('failed')

    const started = Date.now()
    const output = await runCliJson(['webhooks', 'recover', webhook.id, '--since', '1h', '--yes'], env())
    expect(output).to.include({webhook_id: webhook.id, customer_id: owner.customer.id, queued: 1})
    expect(Date.parse(output.since)).to.be.within(started - 3_600_000 - 5000, Date.now() - 3_600_000)
    await receiver.waitFor(seen + 2)
    const resent = receiver.requests.at(-1)!
    expect(resent.headers['x-service-delivery']).to.equal(row.id)
    expect(verifyDelivery(resent, secret!)).to.equal(true)
    await deliveryReaches(daemon, row.id, 'succeeded')
    expect((await daemon.services.deliveries.show(row.id)).status).to.equal('succeeded')

    const since = new Date(Date.now() - 3_600_000).toISOString()
    const plain = await runCli(['webhooks', 'recover', webhook.id, '--since', since, '--yes'], env())
    expect(plain.code, plain.stderr).to.equal(0)
    expect(plain.stdout).to.equal(
      `Queued 0 failed deliveries of ${webhook.id} created since ${since} again; a running daemon sends them within a few seconds.\n`,
    )
  })
})

describe('webhooks create for a customer that does not exist', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    const env = () => ({...backend.env, LEADS_MASTER_KEY: 'ab'.repeat(32), LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})

    before(async function () {
      daemon = await startTestDaemon(backend, {}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
    })
    after(async function () {
      await daemon.stop()
    })

    it('says the customer does not exist, as every other --customer does, not the database constraint that refused it', async function () {
      const missing = '00000000-0000-4000-8000-000000000000'
      const text = await runCli(['webhooks', 'create', '--customer', missing, '--url', 'https://localhost:8443/hooks'], env())
      expect(text.code).to.equal(1)
      expect(text.stdout).to.equal('')
      expect(text.stderr).to.equal(`Error: customer ${missing} does not exist (hint: run \`leads customers list\`)\n`)
      const json = await runCli(['webhooks', 'create', '--customer', missing, '--url', 'https://localhost:8443/hooks', '--json'], env())
      expect(json.code).to.equal(1)
      expect(JSON.parse(json.stderr).error).to.include({type: 'not_found_error', code: 404})
    })
  })
})
