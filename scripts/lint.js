#!/usr/bin/env node
// `npm run lint`: ESLint (typescript-eslint) and Prettier's check over the whole tree.
// ESLint lives in tools/lint with its own install: typescript-eslint parses with the TypeScript 6
// API, which the project's TypeScript 7 compiler does not offer. `npm install` installs it
// (scripts/install-tools.js), and so does this script when it is missing.
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const lintTools = path.join(root, 'tools/lint')

const run = (command, args, cwd = root) => spawnSync(command, args, {cwd, stdio: 'inherit'}).status ?? 1

if (!fs.existsSync(path.join(lintTools, 'node_modules/.bin/eslint'))) {
  const installed = run(process.execPath, [path.join(root, 'scripts/install-tools.js'), 'lint'])
  if (installed !== 0) process.exit(installed)
}
const eslint = run(path.join(lintTools, 'node_modules/.bin/eslint'), ['-c', path.join(lintTools, 'eslint.config.js'), '.'])
const prettier = run(path.join(root, 'node_modules/.bin/prettier'), ['--check', '--log-level', 'warn', '**/*.{ts,tsx,js}'])
if (eslint === 0 && prettier === 0) console.log('lint: ok')
else console.error("lint: failed (npm run format fixes what Prettier reports; ESLint's findings are fixed by hand)")
process.exit(eslint || prettier)
