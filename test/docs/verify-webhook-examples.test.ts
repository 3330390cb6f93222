import {execFile, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import type {IncomingHttpHeaders} from 'node:http'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {verifyWebhook} from '../../docs/examples/webhook-verify/verify.js'
import {SECRET_OVERLAP_MS} from '../../src/webhooks/signing-secrets.js'
import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {PROJECT_ROOT} from '../helpers/cli.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {type ReceivedRequest, Receiver} from '../helpers/receiver.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import {verifyDelivery} from '../helpers/verify-signature.js'

const EXAMPLES = path.join(PROJECT_ROOT, 'docs', 'examples', 'webhook-verify')
const HOOKS = '/api/agents/crm/lead-webhooks'
const WRONG_SECRET = `svc_whsec_${'0'.repeat(64)}`

/** One request as a receiver got it, the secret it verifies with, and its clock. */
interface Check {
  body: Buffer
  headers: IncomingHttpHeaders
  secret: string
  nowMs: number
}

/** The checks as every harness reads them on stdin: the body in base64, the header values as strings, the clock in Unix seconds. */
function checksJson(checks: Check[]): string {
  return JSON.stringify(
    checks.map((check) => ({
      body: check.body.toString('base64'),
      headers: Object.fromEntries(Object.entries(check.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string')),
      secret: check.secret,
      now: check.nowMs / 1000,
    })),
  )
}

/** Runs a harness that prints one JSON array of verdicts for the checks it reads on stdin. */
function verdictsOf(command: string, args: string[], checks: Check[], options: {cwd?: string; env?: NodeJS.ProcessEnv} = {}): Promise<boolean[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, {timeout: 120_000, ...options}, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${command} failed: ${stderr || error.message}`))
      resolve(JSON.parse(stdout) as boolean[])
    })
    child.stdin?.end(checksJson(checks))
  })
}

// Each harness loads the example from its directory, as a receiver's code would, and answers each check.
const PYTHON_HARNESS = `
import base64, json, sys
sys.path.insert(0, sys.argv[1])
from verify import verify_webhook
checks = json.load(sys.stdin)
print(json.dumps([verify_webhook(base64.b64decode(c["body"]), c["headers"], c["secret"], c["now"]) for c in checks]))
`
const RUBY_HARNESS = `
require "json"
require ARGV[0]
checks = JSON.parse($stdin.read)
puts JSON.generate(checks.map { |c| WebhookVerify.verify(c["body"].unpack1("m"), c["headers"], c["secret"], now: c["now"]) })
`
const PHP_HARNESS = `
require $argv[1];
$checks = json_decode(stream_get_contents(STDIN), true);
echo json_encode(array_map(fn ($c) => leads_verify_webhook(base64_decode($c["body"]), $c["headers"], $c["secret"], (float) $c["now"]), $checks));
`
const GO_HARNESS = `package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"time"

	"harness/webhookverify"
)

type check struct {
	Body    string            \`json:"body"\`
	Headers map[string]string \`json:"headers"\`
	Secret  string            \`json:"secret"\`
	Now     float64           \`json:"now"\`
}

func main() {
	var checks []check
	if err := json.NewDecoder(os.Stdin).Decode(&checks); err != nil {
		panic(err)
	}
	verdicts := []bool{}
	for _, c := range checks {
		body, err := base64.StdEncoding.DecodeString(c.Body)
		if err != nil {
			panic(err)
		}
		header := http.Header{}
		for name, value := range c.Headers {
			header.Set(name, value)
		}
		verdicts = append(verdicts, webhookverify.Verify(body, header, c.Secret, time.UnixMilli(int64(c.Now*1000))))
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		panic(err)
	}
}
`

/** The Go example's verdicts: a module of its own in a scratch directory, built offline with the local toolchain. */
async function goVerdicts(checks: Check[]): Promise<boolean[]> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-webhook-verify-go-'))
  try {
    fs.mkdirSync(path.join(scratch, 'webhookverify'))
    fs.copyFileSync(path.join(EXAMPLES, 'verify.go'), path.join(scratch, 'webhookverify', 'verify.go'))
    fs.writeFileSync(path.join(scratch, 'go.mod'), 'module harness\n\ngo 1.17\n')
    fs.writeFileSync(path.join(scratch, 'main.go'), GO_HARNESS)
    // Offline, with the local toolchain; a build cache of its own where the environment names none.
    const env = {
      GOCACHE: path.join(os.tmpdir(), 'leads-go-build-cache'),
      ...process.env,
      GOFLAGS: '-mod=mod',
      GOPROXY: 'off',
      GOTOOLCHAIN: 'local',
      GO111MODULE: 'on',
    }
    return await verdictsOf('go', ['run', '.'], checks, {cwd: scratch, env})
  } finally {
    fs.rmSync(scratch, {recursive: true, force: true})
  }
}

interface Example {
  language: string
  file: string
  /** The command whose presence on the PATH lets this example run; null for the ones every run checks. */
  toolchain: string | null
  verdicts: (checks: Check[]) => Promise<boolean[]>
}

const EXAMPLE_FILES: Example[] = [
  {
    language: 'typescript',
    file: 'verify.ts',
    toolchain: null,
    verdicts: async (checks) => checks.map((c) => verifyWebhook(c.body, c.headers, c.secret, c.nowMs)),
  },
  // -I: nothing from the environment; -B: no __pycache__ in docs/.
  {language: 'python', file: 'verify.py', toolchain: null, verdicts: (checks) => verdictsOf('python3', ['-I', '-B', '-c', PYTHON_HARNESS, EXAMPLES], checks)},
  {language: 'go', file: 'verify.go', toolchain: 'go', verdicts: goVerdicts},
  {
    language: 'ruby',
    file: 'verify.rb',
    toolchain: 'ruby',
    verdicts: (checks) => verdictsOf('ruby', ['-e', RUBY_HARNESS, path.join(EXAMPLES, 'verify.rb')], checks),
  },
  {
    language: 'php',
    file: 'verify.php',
    toolchain: 'php',
    verdicts: (checks) => verdictsOf('php', ['-r', PHP_HARNESS, '--', path.join(EXAMPLES, 'verify.php')], checks),
  },
]

const onPath = (command: string) => spawnSync(command, ['version'], {stdio: 'ignore'}).error === undefined
/** The examples this machine can run: TypeScript and Python always, the others where their toolchain is on the PATH. */
const RUNNABLE = EXAMPLE_FILES.filter((example) => example.toolchain === null || onPath(example.toolchain))
const NOT_CHECKED = EXAMPLE_FILES.filter((example) => !RUNNABLE.includes(example))

/** Asserts what every runnable example answers, check by check. */
async function expectVerdicts(cases: Array<[label: string, check: Check, accepted: boolean]>): Promise<void> {
  const checks = cases.map(([, check]) => check)
  const answers = await Promise.all(RUNNABLE.map(async (example) => [example.language, await example.verdicts(checks)] as const))
  const got = cases.map(([label], index) => ({label, ...Object.fromEntries(answers.map(([language, verdicts]) => [language, verdicts[index]]))}))
  expect(got).to.deep.equal(cases.map(([label, , accepted]) => ({label, ...Object.fromEntries(RUNNABLE.map((example) => [example.language, accepted]))})))
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
  this.timeout(180_000)
  before(function () {
    // Not a skipped test: the run says which examples it could not check, and checks the rest.
    for (const example of NOT_CHECKED) console.log(`      webhook verification example ${example.file}: not checked (${example.toolchain} is not on the PATH)`)
  })

  it('are shown in docs/api.md exactly as they are in docs/examples/webhook-verify', function () {
    const doc = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'api.md'), 'utf8')
    const blocks = [...doc.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({language: match[1], code: match[2]}))
    for (const example of EXAMPLE_FILES) {
      expect(blocks, example.file).to.deep.include({language: example.language, code: fs.readFileSync(path.join(EXAMPLES, example.file), 'utf8')})
    }
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
