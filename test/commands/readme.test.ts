import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {PROJECT_ROOT} from '../helpers/cli.js'

const OCLIF = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'oclif')

/** The README's command reference and docs/commands/ are what `npm run readme` makes from the commands now. */
describe('the command reference', function () {
  it('is up to date with the commands (run `npm run readme` after changing a command)', async function () {
    this.timeout(60_000)
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-readme-'))
    try {
      // A copy of the project that oclif writes into: the built commands linked, the README copied.
      for (const entry of ['package.json', 'tsconfig.json', 'oclif.manifest.json', 'dist', 'node_modules'])
        fs.symlinkSync(path.join(PROJECT_ROOT, entry), path.join(scratch, entry))
      fs.copyFileSync(path.join(PROJECT_ROOT, 'README.md'), path.join(scratch, 'README.md'))
      await new Promise<void>((resolve, reject) =>
        execFile(
          OCLIF,
          ['readme', '--readme-path', 'README.md', '--multi', '--output-dir', 'docs/commands', '--no-aliases'],
          {cwd: scratch, env: {...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true'}},
          (error, _stdout, stderr) => (error ? reject(new Error(`oclif readme failed: ${stderr}`)) : resolve()),
        ),
      )
      const generated = fs.readdirSync(path.join(scratch, 'docs', 'commands')).sort()
      expect(fs.readdirSync(path.join(PROJECT_ROOT, 'docs', 'commands')).sort()).to.deep.equal(generated)
      for (const file of generated) {
        expect(fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'commands', file), 'utf8'), `docs/commands/${file}`).to.equal(
          fs.readFileSync(path.join(scratch, 'docs', 'commands', file), 'utf8'),
        )
      }
      expect(fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8')).to.equal(fs.readFileSync(path.join(scratch, 'README.md'), 'utf8'))
    } finally {
      fs.rmSync(scratch, {recursive: true, force: true})
    }
  })

  it('gives every command a description and at least one example', async function () {
    const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, {description?: string; examples?: unknown[]}>
    }
    const lacking = Object.entries(manifest.commands)
      .filter(([, command]) => !command.description || (command.examples ?? []).length === 0)
      .map(([id]) => id)
    expect(lacking).to.deep.equal([])
  })
})
