import {expect} from 'chai'

import {createDb, type Db} from '../../../src/db/knex.js'

describe('the SQLite client keeping prepared statements', function () {
  let db: Db

  beforeEach(async function () {
    db = createDb({client: 'sqlite', filename: ':memory:', url: 'sqlite://:memory:'})
    await db.schema.createTable('kept_probe', (t) => {
      t.integer('id').primary()
      t.string('name')
    })
  })
  afterEach(async function () {
    await db.destroy()
  })

  it('answers a text sent again with the rows of the moment, inside and outside transactions', async function () {
    const names = () => db.raw('SELECT name FROM kept_probe ORDER BY id') as Promise<Array<{name: string}>>
    await db('kept_probe').insert({id: 1, name: 'first'})
    expect(await names()).to.deep.equal([{name: 'first'}])
    await db.transaction(async (trx) => {
      await trx('kept_probe').insert({id: 2, name: 'second'})
      expect(await trx.raw('SELECT name FROM kept_probe ORDER BY id')).to.deep.equal([{name: 'first'}, {name: 'second'}])
    })
    const inserted = await db('kept_probe').insert({id: 3, name: 'third'})
    expect(inserted).to.deep.equal([3])
    expect(await names()).to.have.length(3)
  })

  it('sees a column added after the text was first prepared', async function () {
    const everything = () => db.raw('SELECT * FROM kept_probe') as Promise<Array<Record<string, unknown>>>
    await db('kept_probe').insert({id: 1, name: 'before'})
    expect(await everything()).to.deep.equal([{id: 1, name: 'before'}])
    await db.schema.alterTable('kept_probe', (t) => t.string('extra').defaultTo('added'))
    expect(await everything()).to.deep.equal([{id: 1, name: 'before', extra: 'added'}])
  })

  it('keeps answering past the number of texts it keeps, the dropped ones prepared again', async function () {
    for (let i = 0; i < 1200; i++) {
      const [row] = (await db.raw(`SELECT ${i} AS n`)) as Array<{n: number}>
      expect(row!.n).to.equal(i)
    }
    const [again] = (await db.raw('SELECT 0 AS n')) as Array<{n: number}>
    expect(again!.n).to.equal(0)
  })

  it('gives a query asking for safe integers its own statement, and the next one plain numbers', async function () {
    await db('kept_probe').insert({id: 1, name: 'n'})
    const sql = 'SELECT id FROM kept_probe'
    const big = (await db.raw(sql).options({safeIntegers: true})) as Array<{id: unknown}>
    expect(big[0]!.id).to.equal(1n)
    const plain = (await db.raw(sql)) as Array<{id: unknown}>
    expect(plain[0]!.id).to.equal(1)
  })

  it('reports a failing statement and goes on with the next', async function () {
    await db('kept_probe').insert({id: 1, name: 'taken'})
    const insert = () => db('kept_probe').insert({id: 1, name: 'again'})
    await insert().then(
      () => expect.fail('the second insert of id 1 was accepted'),
      (error: Error) => expect(error.message).to.match(/UNIQUE constraint failed/),
    )
    await insert().catch(() => undefined)
    expect(await db('kept_probe').count({n: '*'})).to.deep.equal([{n: 1}])
  })
})
