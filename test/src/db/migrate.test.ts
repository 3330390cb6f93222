import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {createDb, type Db} from '../../../src/db/knex.js'
import {migrateIfBehind, migrationStatus} from '../../../src/db/migrate.js'
import {rejectsWith} from '../../helpers/fixtures.js'

describe('migrateIfBehind (every start on the embedded store)', function () {
  let root: string
  let db: Db

  beforeEach(function () {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-migrate-'))
    const filename = path.join(root, 'leads.db')
    db = createDb({client: 'sqlite', filename, url: `sqlite://${filename}`})
  })
  afterEach(async function () {
    await db.destroy()
    fs.rmSync(root, {recursive: true, force: true})
  })

  it('applies every migration to an empty database, then finds nothing to do', async function () {
    const applied = await migrateIfBehind(db)
    const status = await migrationStatus(db)
    expect(applied).to.have.length(status.length).and.to.have.length.above(0)
    expect(status.every((migration) => migration.applied)).to.equal(true)
    expect(await migrateIfBehind(db)).to.deep.equal([])
  })

  it('answers a current database with one read: it neither takes nor needs the migration lock', async function () {
    await migrateIfBehind(db)
    // A lock left held (as by a crashed `leads migrate`) stops knex's latest(); a read-only start must not care.
    await db('knex_migrations_lock').update({is_locked: 1})
    expect((await rejectsWith(db.migrate.latest(), Error)).message).to.match(/locked/)
    expect(await migrateIfBehind(db)).to.deep.equal([])
  })

  it('runs what is pending', async function () {
    await db.migrate.up()
    const [first, ...rest] = (await migrationStatus(db)).map((migration) => migration.name)
    expect(await db('knex_migrations').pluck('name')).to.deep.equal([first])
    expect(await migrateIfBehind(db)).to.deep.equal(rest)
  })

  it('leaves a database that knows a migration this build does not to knex, which refuses it', async function () {
    await migrateIfBehind(db)
    await db('knex_migrations').insert({name: '29991231000000_from_a_newer_build', batch: 99, migration_time: new Date()})
    expect((await rejectsWith(migrateIfBehind(db), Error)).message).to.match(/corrupt/)
  })
})
