import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {CLI, PROJECT_ROOT, runShellAtTerminal} from '../helpers/cli.js'
import {ensureCommand} from '../helpers/debian-package.js'
import {freePort, waitUntil} from '../helpers/local-servers.js'
import {screenOf} from '../helpers/terminal-screen.js'

const README = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8')
const MARK = '<!-- example session: test/commands/readme-session.test.ts runs it as written -->'

/** The README's example values, which stand for what the run itself makes. */
const EXAMPLE = {customer: '8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21', token: 'svc_3f9c…', url: 'http://127.0.0.1:8080'}

interface Step {
  command: string
  expected: string[]
}

/** The marked block as commands (`$ ` lines with their `\` continuations) and the lines each shows. */
function sessionSteps(): Step[] {
  const start = README.indexOf(MARK)
  expect(start, 'the marked example session in the README').to.be.greaterThan(-1)
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(start))![1]!
  const steps: Step[] = []
  let continued = false
  for (const line of block.split('\n')) {
    if (line.startsWith('$ ')) {
      steps.push({command: line.slice(2), expected: []})
      continued = line.endsWith('\\')
    } else if (continued) {
      steps.at(-1)!.command += `\n${line}`
      continued = line.endsWith('\\')
    } else steps.at(-1)?.expected.push(line)
  }
  for (const step of steps) while (step.expected.at(-1) === '') step.expected.pop()
  return steps
}

/**
 * An expected line as a pattern: the example token stands for any token, an example id (a UUID)
 * for any, `…` for anything, and a run of spaces (padding) for one or more.
 */
function linePattern(line: string): RegExp {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ {2,}/g, ' +')
  const pattern = line
    .trimEnd()
    .split(EXAMPLE.token)
    .map((part) => part.split('…').map(escape).join('.*'))
    .join('svc_[0-9a-f]{64}')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')
  return new RegExp(`^${pattern}$`)
}

/**
 * The README's example session, run as a new user runs it on a fresh clone: the daemon started
 * as `npm start` starts it (after its build) in a checkout with no `.leads/` yet, then every
 * command of the block at an 80-column terminal, in order, and what the terminal shows compared
 * with the README line by line. The run's own customer id, token and port stand in for the
 * example's; nothing else is changed.
 */
describe('the README example session', function () {
  let clone: string
  // npm's cache for the session's `npx` calls, removed with the clone: npx installs the checkout
  // it runs from into its cache, under a name of the clone's path, new for every run.
  let npmCache: string
  let daemon: ChildProcess
  let port: number

  before(async function () {
    this.timeout(240_000)
    // The session's HTTP calls are curl's, as a reader would type them.
    ensureCommand('curl')
    clone = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-clone-'))
    npmCache = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-npm-cache-'))
    for (const entry of ['package.json', 'bin', 'dist', 'node_modules', 'oclif.manifest.json', 'examples', 'scripts'])
      fs.symlinkSync(path.join(PROJECT_ROOT, entry), path.join(clone, entry))
    port = await freePort()
    daemon = spawn(process.execPath, [CLI, 'daemon'], {cwd: clone, env: {...process.env, LEADS_PORT: String(port), LEADS_LOG_LEVEL: 'warn'}, stdio: 'ignore'})
    await waitUntil(
      () =>
        fetch(`http://127.0.0.1:${port}/readyz`).then(
          (response) => response.ok,
          () => false,
        ),
      'the daemon to be ready',
      20_000,
    )
  })
  after(function () {
    daemon?.kill()
    fs.rmSync(clone, {recursive: true, force: true})
    fs.rmSync(npmCache, {recursive: true, force: true})
  })

  it('runs as written and shows what the README shows', async function () {
    this.timeout(120_000)
    const steps = sessionSteps()
    expect(steps.map((step) => step.command.split(/\s+/).slice(0, 3).join(' '))).to.include.members(['npx leads customers', 'npx leads keys'])
    const actual = {customer: '', token: ''}
    for (const step of steps) {
      const command = step.command
        .replaceAll(EXAMPLE.customer, actual.customer || EXAMPLE.customer)
        .replaceAll(EXAMPLE.token, actual.token || EXAMPLE.token)
        .replaceAll(EXAMPLE.url, `http://127.0.0.1:${port}`)
      // npm's update check would ask the registry; nothing in the session needs it.
      const result = await runShellAtTerminal(command, {npm_config_cache: npmCache, npm_config_update_notifier: 'false'}, clone)
      const shown = screenOf(result.stdout)
      expect(shown.length, `${step.command}\n${shown.join('\n')}`).to.equal(step.expected.length)
      step.expected.forEach((line, index) => expect(shown[index], `${step.command}: line ${index + 1}`).to.match(linePattern(line)))
      if (command.includes('customers create')) actual.customer = shown[0]!
      if (command.includes('keys issue')) actual.token = /svc_[0-9a-f]{64}/.exec(shown.join('\n'))![0]
    }
    expect(actual.customer).to.not.equal('')
    expect(actual.token).to.not.equal('')
  })
})
