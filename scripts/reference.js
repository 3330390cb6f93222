#!/usr/bin/env node
// `node scripts/reference.js [OUT]`: renders the OpenAPI document the daemon serves at
// GET /openapi.json (built by src/openapi/openapi-document.ts; run `npm run build` first) to one
// static HTML page with Redocly's build-docs, into OUT (default docs/reference.html). Offline and
// deterministic: the same document gives the same bytes, so a test can compare the committed page
// with a fresh one (test/docs/reference.test.ts). `npm run docs` runs it after the command reference.
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const out = path.resolve(process.argv[2] ?? path.join(root, 'docs', 'reference.html'))
const {openApiDocument} = await import(path.join(root, 'dist', 'src', 'openapi', 'openapi-document.js'))

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-reference-'))
try {
  const source = path.join(scratch, 'openapi.json')
  fs.writeFileSync(source, JSON.stringify(openApiDocument(), null, 2))
  const result = spawnSync(
    path.join(root, 'node_modules', '.bin', 'redocly'),
    ['build-docs', source, '--output', out, '--config', path.join(root, 'redocly.yaml'), '--title', 'leads API reference'],
    {cwd: root, encoding: 'utf8', env: {...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true'}},
  )
  if (result.status !== 0) {
    process.stderr.write(result.stdout + result.stderr)
    process.exit(result.status ?? 1)
  }
  console.log(`wrote ${path.relative(process.cwd(), out) || out}`)
} finally {
  fs.rmSync(scratch, {recursive: true, force: true})
}
