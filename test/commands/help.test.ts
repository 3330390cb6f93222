import fs from 'node:fs'
import path from 'node:path'

import {expect} from 'chai'

import {PROJECT_ROOT, runCli} from '../helpers/cli.js'

const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'oclif.manifest.json'), 'utf8')) as {
  commands: Record<string, {description?: string}>
}
const ids = Object.keys(manifest.commands).sort()

/** What `leads help` prints, for every command of the project. */
describe('help', function () {
  it('prints each command\u2019s first line once, and a DESCRIPTION only when there is more to say', async function () {
    for (const id of ids) {
      const help = (await runCli([...id.split(':'), '--help'], {})).stdout
      const summary = manifest.commands[id]!.description!.split('\n')[0]!
      expect(help.startsWith(`${summary}\n`), id).to.equal(true)
      expect(help.split(summary).length - 1, `${id}: the summary printed once`).to.equal(1)
      expect(help.includes('\nDESCRIPTION\n'), id).to.equal(manifest.commands[id]!.description!.includes('\n\n'))
    }
  })

  it('has paragraphs the help can wrap: no line break inside one', function () {
    for (const id of ids) {
      for (const paragraph of manifest.commands[id]!.description!.split('\n\n')) expect(paragraph, id).to.not.include('\n')
    }
  })

  it('states a default once, and lists exclusive flags without an empty choice', async function () {
    for (const id of ids) {
      const help = (await runCli([...id.split(':'), '--help'], {})).stdout
      for (const [, value] of help.matchAll(/\[default: ([^\]]+)\]/g)) expect(help, id).to.not.include(`(default: ${value})`)
      expect(help, id).to.not.match(/\| \]/)
    }
    expect((await runCli(['pull', '--help'], {})).stdout).to.include('[--state <value> | --no-state] [--reset]')
    const both = await runCli(['pull', '--reset', '--no-state'], {})
    expect(both.code).to.equal(2)
    expect(both.stderr).to.include('--reset cannot be used with --no-state')
  })

  it('lists every command of the root help with a summary, version included', async function () {
    const root = (await runCli(['--help'], {})).stdout
    const commands = root.slice(root.indexOf('\nCOMMANDS\n') + 10, root.indexOf('\nENVIRONMENT\n'))
    const entries = commands.split('\n').filter((line) => /^ {2}\S/.test(line))
    expect(entries.map((line) => line.trim().split(/\s+/)[0])).to.include('version')
    for (const line of entries) expect(line.trim(), line).to.match(/^\S+\s{2,}\S/)
    const version = await runCli(['version', '--json'], {})
    expect(JSON.parse(version.stdout)).to.include.keys(['version', 'platform', 'arch', 'node'])
  })
})
