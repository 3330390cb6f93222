import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../../src/config/config.js'
import {resolveMasterKey} from '../../../src/config/master-key.js'
import {createDb} from '../../../src/db/knex.js'

const modeOf = (file: string) => fs.statSync(file).mode & 0o777

/** Opens the store, writes once (so the WAL files exist), and closes it. */
async function openStore(filename: string): Promise<void> {
  const db = createDb({client: 'sqlite', filename, url: `sqlite://${filename}`})
  try {
    await db.raw('create table if not exists probe (id integer)')
    await db.raw('insert into probe values (1)')
    for (const file of [filename, `${filename}-wal`, `${filename}-shm`]) expect(modeOf(file), file).to.equal(0o600)
  } finally {
    await db.destroy()
  }
}

describe('embedded store file modes', function () {
  let root: string

  beforeEach(function () {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-modes-'))
  })
  afterEach(function () {
    fs.rmSync(root, {recursive: true, force: true})
  })

  it('creates its directory 0700 and its files 0600', async function () {
    const filename = path.join(root, '.leads', 'leads.db')
    await openStore(filename)
    expect(modeOf(path.dirname(filename))).to.equal(0o700)
  })

  it('tightens a dedicated directory and files it finds world-readable', async function () {
    const directory = path.join(root, '.leads')
    fs.mkdirSync(directory, {mode: 0o755})
    fs.chmodSync(directory, 0o755)
    const filename = path.join(directory, 'leads.db')
    fs.writeFileSync(filename, '', {mode: 0o644})
    fs.chmodSync(filename, 0o644)
    await openStore(filename)
    expect(modeOf(directory)).to.equal(0o700)
  })

  it('leaves the mode of a shared directory alone but still protects its own files', async function () {
    fs.chmodSync(root, 0o755)
    fs.writeFileSync(path.join(root, 'someone-else.txt'), 'x')
    await openStore(path.join(root, 'leads.db'))
    expect(modeOf(root)).to.equal(0o755)
  })

  it('tightens a kept master.key it finds world-readable (restored from a backup, say), as it does the store', function () {
    const directory = path.join(root, '.leads')
    fs.mkdirSync(directory, {mode: 0o700})
    const keyFile = path.join(directory, 'master.key')
    fs.writeFileSync(keyFile, `${'ab'.repeat(32)}\n`)
    fs.chmodSync(keyFile, 0o644)
    const key = resolveMasterKey(loadConfig({LEADS_DATABASE_URL: `sqlite://${path.join(directory, 'leads.db')}`}))
    expect(key.toString('hex')).to.equal('ab'.repeat(32))
    expect(modeOf(keyFile)).to.equal(0o600)
  })
})
