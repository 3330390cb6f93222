import {execFile} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

import {expect} from 'chai'

import {backends} from '../helpers/backends.js'
import {PROJECT_ROOT} from '../helpers/cli.js'
import {startTestDaemon} from '../helpers/test-daemon.js'

/** The image's HEALTHCHECK command, as the Dockerfile gives it in exec form. */
function healthcheckCommand(): string[] {
  const dockerfile = fs.readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8').replaceAll('\\\n', ' ')
  const line = dockerfile.split('\n').find((text) => text.startsWith('HEALTHCHECK'))!
  return JSON.parse(line.slice(line.indexOf('CMD') + 3).trim()) as string[]
}

describe('docs/container.md', function () {
  it("says the image's HEALTHCHECK holds for a worker, which answers /healthz on LEADS_PORT (compose keeps it for the worker)", async function () {
    const worker = await startTestDaemon(backends()[0]!, {role: 'worker'})
    try {
      const [program, ...args] = healthcheckCommand()
      expect(program).to.equal('node')
      const code = await new Promise<number>((resolve) => {
        execFile(process.execPath, args, {env: {...process.env, LEADS_PORT: new URL(worker.url).port}}, (error) => resolve(error ? Number(error.code ?? 1) : 0))
      })
      expect(code).to.equal(0)
    } finally {
      await worker.stop()
    }
    const doc = fs.readFileSync(path.join(PROJECT_ROOT, 'docs/container.md'), 'utf8').replaceAll(/\s+/g, ' ')
    expect(doc).not.to.match(/worker` serves no HTTP|Turn it off for workers/)
    expect(doc).to.include('`daemon --role worker` answers `/healthz`')
  })
})
