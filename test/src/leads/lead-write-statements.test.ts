import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {CustomersStore} from '../../../src/customers/customers-store.js'
import {createDb, type Db, readServerFacts, statementBudget} from '../../../src/db/knex.js'
import {type Statement, statementBytes} from '../../../src/db/statements.js'
import {LeadCountsStore} from '../../../src/leads/lead-counts-store.js'
import {LeadSearchIndex} from '../../../src/leads/lead-search-index.js'
import {leadWords} from '../../../src/leads/lead-search-terms.js'
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
      await readServerFacts(db)
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

    it('writes the words of a lead alone in its filters as rows, and of leads sharing them as one document', function () {
      const words = (leads: ReturnType<typeof leadRecord>[]) =>
        store.insertStatements(leads).filter((statement) => statement.sql.startsWith('INSERT INTO `lead_search_words`'))
      const lead = leadRecord(tenant, {contactName: 'Ada Lovelace', contactEmail: 'countess@example.org', status: 'won', leadLine: 'buyer'})
      const [alone, ...more] = words([lead])
      expect(more).to.deep.equal([])
      expect(alone!.sql).to.include(' VALUES ')
      expect(leadWords(lead)).to.deep.equal(['ada', 'lovelace', 'countess'])
      expect(rowsOf(alone!.sql)).to.equal(3)
      expect(alone!.bindings).to.include.members(['won', 'buyer', lead.id, 'ada', 'lovelace', 'countess', ' ada lovelace countess'])

      const shared = words([
        leadRecord(tenant, {contactName: 'Grace Hopper', status: 'won'}),
        leadRecord(tenant, {contactName: 'Grace Kelly', status: 'won'}),
        leadRecord(tenant, {contactName: 'Alan Turing', status: 'lost'}),
      ])
      expect(shared.map((statement) => (statement.sql.includes(' VALUES ') ? 'rows' : 'document'))).to.deep.equal(['document', 'rows'])
      expect((JSON.parse(String(shared[0]!.bindings.at(-1))) as unknown[]).length).to.equal(2)
    })

    it('sends the search words of a write in one statement, or in several of at most half the server packet', function () {
      // Distinct words as long as a name allows, in quotes the statement escapes.
      const name = (i: number) => Array.from({length: 20}, (_, w) => `"w${i}x${w}"`.padEnd(9, 'q')).join(' ')
      const lead = (i: number) => leadRecord(tenant, {contactName: name(i), contactEmail: null})
      const inserted = (count: number) =>
        store
          .insertStatements(Array.from({length: count}, (_, i) => lead(i)))
          .filter((statement) => statement.sql.startsWith('INSERT INTO `lead_search_words`'))
      const leadsIn = (statements: Statement[]) =>
        statements.reduce((sum, statement) => sum + (JSON.parse(String(statement.bindings.at(-1))) as unknown[]).length, 0)
      expect(inserted(500)).to.have.length(1)
      const many = backend.name === 'mysql' ? Math.ceil(statementBudget(db) / 300) : 2_000
      const statements = inserted(many)
      expect(leadsIn(statements)).to.equal(many)
      if (backend.name === 'sqlite') return expect(statements).to.have.length(1)
      expect(statements.length).to.be.above(1)
      for (const statement of statements) expect(statementBytes(statement)).to.be.at.most(statementBudget(db))
    })
  })
})
