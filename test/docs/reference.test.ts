import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {openApiDocument} from '../../src/openapi/openapi-document.js'
import {PROJECT_ROOT} from '../helpers/cli.js'

const COMMITTED = path.join(PROJECT_ROOT, 'docs', 'reference.html')

/** docs/reference.html is what `npm run docs` renders from the OpenAPI document the daemon serves now. */
describe('the API reference page', function () {
  it('is up to date with the OpenAPI document (run `npm run docs` after changing the API)', async function () {
    this.timeout(120_000)
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-reference-test-'))
    try {
      const fresh = path.join(scratch, 'reference.html')
      await new Promise<void>((resolve, reject) =>
        execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'reference.js'), fresh], {cwd: PROJECT_ROOT}, (error, _stdout, stderr) =>
          error ? reject(new Error(`scripts/reference.js failed: ${stderr}`)) : resolve(),
        ),
      )
      // Compared whole, byte for byte: a stale page fails, whatever changed.
      const committed = fs.readFileSync(COMMITTED, 'utf8')
      expect(committed === fs.readFileSync(fresh, 'utf8'), 'docs/reference.html differs from a fresh render: run `npm run docs`').to.equal(true)
    } finally {
      fs.rmSync(scratch, {recursive: true, force: true})
    }
  })

  it('shows every operation of the document', function () {
    const page = fs.readFileSync(COMMITTED, 'utf8')
    const operations = Object.values(openApiDocument().paths as Record<string, Record<string, {operationId?: string}>>).flatMap((methods) =>
      Object.values(methods).map((operation) => operation.operationId),
    )
    expect(operations.length).to.be.greaterThan(5)
    expect(operations.filter((id) => id === undefined || !page.includes(id))).to.deep.equal([])
  })
})
