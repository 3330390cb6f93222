import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {CustomersStore} from '../../../src/customers/customers-store.js'
import {createDb, type Db, readPacketLimit, statementBudget} from '../../../src/db/knex.js'
import {statementBytes} from '../../../src/db/statements.js'
import {LeadCountsStore} from '../../../src/leads/lead-counts-store.js'
import {LeadSearchIndex} from '../../../src/leads/lead-search-index.js'
import {LeadWriteStatements} from '../../../src/leads/lead-write-statements.js'
import {forEachBackend} from '../../helpers/backends.js'
import {leadRecord} from '../../helpers/fixtures.js'

describe('LeadWriteStatements', function () {
  forEachBackend((backend) => {
    let db: Db
    let store: LeadWriteStatements
    const tenant = {customer: {id: randomUUID()}, stages: [{id: randomUUID()}]}
    /** How many leads a statement writes, from the tuples of its VALUES list. */
    const rowsOf = (sql: string) => sql.split('), (').length

    before(async function () {
      db = createDb(backend.config().database)
      await readPacketLimit(db)
      const customers = new CustomersStore(db)
      store = new LeadWriteStatements(db, new LeadCountsStore(db, customers), new LeadSearchIndex(db, customers))
    })
    after(async function () {
      await db.destroy()
    })

    it('writes a bulk of 500 usual leads in one INSERT on MySQL (per 250 on SQLite)', function () {
      const leads = Array.from({length: 500}, (_, i) =>
        leadRecord(tenant, {contactName: `Row ${i}`, contactEmail: `row${i}@example.org`, customFields: {budget: i, notes: 'usual'}}),
      )
      const expected = backend.name === 'mysql' ? [500] : [250, 250]
      expect(store.upsertRows(leads).map((statement) => rowsOf(statement.sql))).to.deep.equal(expected)
      const inserts = store.insertStatements(leads).filter((statement) => statement.sql.startsWith('INSERT INTO `leads`'))
      expect(inserts.map((statement) => rowsOf(statement.sql))).to.deep.equal(expected)
    })

    it('splits leads whose values escape large into statements of at most half the server packet', async function () {
      const customFields = Object.fromEntries(['q1', 'q2', 'q3', 'q4', 'q5'].map((slug) => [slug, '"\\'.repeat(1000)]))
      const leads = Array.from({length: 500}, (_, i) => leadRecord(tenant, {contactName: `Quoted ${i}`, customFields}))
      const statements = store.upsertRows(leads)
      expect(statements.reduce((rows, statement) => rows + rowsOf(statement.sql), 0)).to.equal(500)
      if (backend.name === 'sqlite') {
        // Values are bound outside the text: only the row cap applies.
        expect(statements).to.have.length(2)
        return
      }
      const [[{packet}]] = (await db.raw('SELECT @@max_allowed_packet AS packet')) as [[{packet: number | string}]]
      expect(statementBudget(db)).to.equal(Math.floor(Number(packet) / 2))
      expect(statements.length).to.be.above(1)
      for (const statement of statements) expect(statementBytes(statement)).to.be.at.most(statementBudget(db))
    })
  })
})
