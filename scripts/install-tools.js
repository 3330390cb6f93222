#!/usr/bin/env node
// `node scripts/install-tools.js [NAME …]`: installs the development tools that live apart in
// tools/ (each pins a TypeScript its library needs, which the project's TypeScript 7 compiler is
// not): tools/lint (ESLint with typescript-eslint, for `npm run lint`) and tools/openapi-client
// (openapi-typescript, for the generated-client test). Run by `npm install` after the project's
// own packages, so `npm test` and `npm run lint` reach no registry; with names, installs those
// only and only if missing (how lint.js and the test make sure of theirs). A checkout without
// tools/ (the container's dependency layer) has nothing to install.
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const toolsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'tools')

const named = process.argv.slice(2)
// As the postinstall of anything but `npm install` or `npm ci` in this checkout (`npx leads`
// installs the checkout into npm's cache and runs its install scripts there), there is nothing to do.
if (named.length === 0 && !['install', 'ci'].includes(process.env['npm_command'] ?? '')) process.exit(0)
const tools = named.length > 0 ? named : fs.existsSync(toolsDir) ? fs.readdirSync(toolsDir) : []
for (const name of tools) {
  const dir = path.join(toolsDir, name)
  if (!fs.existsSync(path.join(dir, 'package-lock.json'))) continue
  if (named.length > 0 && fs.existsSync(path.join(dir, 'node_modules'))) continue
  const installed = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--silent'], {cwd: dir, stdio: 'inherit'})
  if (installed.status !== 0) {
    console.error(`installing tools/${name} failed (hint: run \`npm ci\` in tools/${name} to see why)`)
    process.exit(installed.status ?? 1)
  }
}
