#!/usr/bin/env node
// The second step of `npm run build`: writes oclif.manifest.json (every command's flags and
// description, which `leads` reads at start instead of importing every command) with `oclif
// manifest`, unless it is newer than everything it is made from: package.json and the compiled
// commands and sources they import. tsc leaves the output of an unchanged source as it was
// (tsconfig.json's `incremental`), so a build after editing only tests skips this step.
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const manifest = path.join(root, 'oclif.manifest.json')
const sources = [path.join(root, 'package.json'), ...['dist/commands', 'dist/src'].flatMap((dir) => filesUnder(path.join(root, dir)))]

function filesUnder(dir) {
  if (!fs.existsSync(dir)) return []
  return fs
    .readdirSync(dir, {recursive: true, withFileTypes: true})
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
}

const newestSource = Math.max(...sources.map((file) => fs.statSync(file).mtimeMs))
if (fs.existsSync(manifest) && fs.statSync(manifest).mtimeMs > newestSource) process.exit(0)
const oclif = path.join(root, 'node_modules/.bin/oclif')
const written = spawnSync(oclif, ['manifest'], {cwd: root, stdio: 'inherit', env: {...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true'}})
process.exit(written.status ?? 1)
