import {execFile} from 'node:child_process'
import fs from 'node:fs'
import type {IncomingHttpHeaders} from 'node:http'
import path from 'node:path'

import {expect} from 'chai'

import {verifyWebhook} from '../../docs/examples/verify-webhook.js'
import {SECRET_OVERLAP_MS} from '../../src/webhooks/signing-secrets.js'
import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {PROJECT_ROOT} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {type ReceivedRequest, Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {verifyDelivery} from '../helpers/verify-signature.js'

const EXAMPLES = path.join(PROJECT_ROOT, 'docs', 'examples')
const TS_EXAMPLE = path.join(EXAMPLES, 'verify-webhook.ts')
const PYTHON_EXAMPLE = path.join(EXAMPLES, 'verify_webhook.py')
const HOOKS = '/api/agents/crm/lead-webhooks'
const WRONG_SECRET = `svc_whsec_${'0'.repeat(64)}`

/** One request as a receiver got it, the secret it verifies with, and its clock. */
interface Check {
  body: Buffer
  headers: IncomingHttpHeaders
  secret: string
  nowMs: number
}

// Imports the example from its directory, as a receiver's code would, and answers each check.
const PYTHON_HARNESS = `
import base64, json, sys
sys.path.insert(0, sys.argv[1])
from verify_webhook import verify_webhook
checks = json.load(sys.stdin)
print(json.dumps([verify_webhook(base64.b64decode(c["body"]), c["headers"], c["secret"], c["now"]) for c in checks]))
`

/** The Python example's verdicts, from python3 (-I: nothing from the environment; -B: no __pycache__ in docs/). */
function pythonVerdicts(checks: Check[]): Promise<boolean[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-I', '-B', '-c', PYTHON_HARNESS, EXAMPLES], {timeout: 15_000}, (error, stdout, stderr) => {
      if (error) return reject(new Error(`python3 failed: ${stderr || error.message}`))
      resolve(JSON.parse(stdout) as boolean[])
    })
    child.stdin?.end(
      JSON.stringify(checks.map((check) => ({body: check.body.toString('base64'), headers: check.headers, secret: check.secret, now: check.nowMs / 1000}))),
    )
  })
}

/** Asserts what both examples answer, check by check: the TypeScript one built from docs/examples, the Python one run by python3. */
async function expectVerdicts(cases: Array<[label: string, check: Check, accepted: boolean]>): Promise<void> {
  const python = await pythonVerdicts(cases.map(([, check]) => check))
  const got = cases.map(([label, check], index) => ({
    label,
    typescript: verifyWebhook(check.body, check.headers, check.secret, check.nowMs),
    python: python[index],
  }))
  expect(got).to.deep.equal(cases.map(([label, , accepted]) => ({label, typescript: accepted, python: accepted})))
}

/** A check of the request as received, verified with `secret` at the time it arrived. */
function asReceived(request: ReceivedRequest, secret: string, change: Partial<Check> = {}): Check {
  return {body: request.rawBody, headers: request.headers, secret, nowMs: request.receivedAt, ...change}
}

function withoutHeader(headers: IncomingHttpHeaders, name: string): IncomingHttpHeaders {
  const {[name]: _removed, ...rest} = headers
  return rest
}

describe('the webhook verification examples', function () {
  it('are shown in docs/api.md exactly as they are in docs/examples', function () {
    const doc = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'api.md'), 'utf8')
    const blocks = [...doc.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({language: match[1], code: match[2]}))
    expect(blocks).to.deep.include({language: 'ts', code: fs.readFileSync(TS_EXAMPLE, 'utf8')})
    expect(blocks).to.deep.include({language: 'python', code: fs.readFileSync(PYTHON_EXAMPLE, 'utf8')})
  })

  forEachBackend((backend) => {
    let daemon: TestDaemon
    let receiver: Receiver
    let tenant: TestTenant
    let webhookId: string
    let secret: string
    const call = (method: string, url: string, body: unknown) =>
      daemon.request(url, {
        method,
        token: tenant.token,
        customerId: tenant.customer.id,
        headers: {'content-type': 'application/json'},
        body: JSON.stringify(body),
      })
    /** Creates a lead and returns the delivery request the receiver got for it. */
    const deliveryOfNewLead = async (name: string): Promise<ReceivedRequest> => {
      receiver.requests.length = 0
      expect((await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_name: name})).status).to.equal(201)
      await receiver.waitFor(1)
      return receiver.requests[0]!
    }

    before(async function () {
      receiver = await new Receiver().start()
      daemon = await startTestDaemon(backend, {}, {LEADS_WEBHOOK_ALLOW_HOSTS: 'localhost'})
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      const created = await call('POST', HOOKS, {url: receiver.url, event_types: ['lead.created']})
      expect(created.status).to.equal(201)
      webhookId = created.body.webhook.id as string
      secret = created.body.secret as string
    })
    after(async function () {
      await daemon.stop()
      await receiver.stop()
    })

    it('accept a real delivery, and reject it with its body changed, with another secret or once its timestamp is stale', async function () {
      const request = await deliveryOfNewLead('Ada Lovelace')
      expect(request.headers).not.to.have.property('x-service-signature-previous')
      const tampered = Buffer.from(request.rawBody.toString('utf8').replace('"Ada Lovelace"', '"Eve Lovelace"'))
      expect(tampered.equals(request.rawBody)).to.equal(false)
      await expectVerdicts([
        ['as received', asReceived(request, secret), true],
        ['body changed', asReceived(request, secret, {body: tampered}), false],
        ['another secret', asReceived(request, WRONG_SECRET), false],
        ['4 min 50 s later', asReceived(request, secret, {nowMs: request.receivedAt + 290_000}), true],
        ['5 min 1 s later', asReceived(request, secret, {nowMs: request.receivedAt + 301_000}), false],
        ['without its timestamp', asReceived(request, secret, {headers: withoutHeader(request.headers, 'x-service-timestamp')}), false],
        ['without its signature', asReceived(request, secret, {headers: withoutHeader(request.headers, 'x-service-signature')}), false],
      ])
    })

    it('across a rotation: the new secret verifies X-Service-Signature and the old one X-Service-Signature-Previous, until 24 h after it', async function () {
      const rotated = await call('PATCH', `${HOOKS}/${webhookId}`, {rotate_secret: true})
      expect(rotated.status).to.equal(200)
      const [oldSecret, newSecret] = [secret, rotated.body.secret as string]

      const during = await deliveryOfNewLead('After the rotation')
      expect(during.headers['x-service-signature']).to.match(/^sha256=[0-9a-f]{64}$/)
      expect(during.headers['x-service-signature-previous']).to.match(/^sha256=[0-9a-f]{64}$/)
      // The independent verifier, header by header: each is made with its own secret over the same material.
      expect(verifyDelivery(during, newSecret)).to.equal(true)
      expect(verifyDelivery(during, oldSecret, Date.now(), 300, 'x-service-signature-previous')).to.equal(true)
      expect(verifyDelivery(during, oldSecret)).to.equal(false)
      expect(verifyDelivery(during, newSecret, Date.now(), 300, 'x-service-signature-previous')).to.equal(false)
      const tampered = Buffer.from(during.rawBody.toString('utf8').replace('"After the rotation"', '"Before the rotation"'))
      await expectVerdicts([
        ['the new secret', asReceived(during, newSecret), true],
        ['the old secret, through X-Service-Signature-Previous', asReceived(during, oldSecret), true],
        [
          'the old secret without X-Service-Signature-Previous',
          asReceived(during, oldSecret, {headers: withoutHeader(during.headers, 'x-service-signature-previous')}),
          false,
        ],
        [
          'the new secret without X-Service-Signature-Previous',
          asReceived(during, newSecret, {headers: withoutHeader(during.headers, 'x-service-signature-previous')}),
          true,
        ],
        ['the old secret, body changed', asReceived(during, oldSecret, {body: tampered}), false],
        ['another secret', asReceived(during, WRONG_SECRET), false],
      ])

      const rotatedAt = (webhook: {secret_rotated_at: number | string}) => Number(webhook.secret_rotated_at)
      const stored = () => daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).first()
      const moveRotation = (at: number) => daemon.db('webhooks').where({customer_id: tenant.customer.id, id: webhookId}).update({secret_rotated_at: at})
      expect(rotatedAt(await stored())).to.be.within(Date.now() - 60_000, Date.now())

      // A minute before the overlap ends, the previous signature is still sent.
      await moveRotation(Date.now() - SECRET_OVERLAP_MS + 60_000)
      const lastMinute = await deliveryOfNewLead('In the last minute of the overlap')
      expect(verifyDelivery(lastMinute, oldSecret, Date.now(), 300, 'x-service-signature-previous')).to.equal(true)

      // 24 h after the rotation, only the new secret signs.
      await moveRotation(Date.now() - SECRET_OVERLAP_MS)
      const later = await deliveryOfNewLead('A day after the rotation')
      expect(later.headers).not.to.have.property('x-service-signature-previous')
      expect(verifyDelivery(later, newSecret)).to.equal(true)
      await expectVerdicts([
        ['the new secret, a day later', asReceived(later, newSecret), true],
        ['the old secret, a day later', asReceived(later, oldSecret), false],
      ])
    })
  })
})
