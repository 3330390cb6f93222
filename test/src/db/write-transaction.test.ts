import {expect} from 'chai'

import {createDb, type Db, readServerFacts} from '../../../src/db/knex.js'
import {GuardRefusal, isGuardRefusal, isUniqueViolation, KeyClaimRefusal} from '../../../src/db/errors.js'
import {compile, keyClaim, registration, StatementBatch, statementBytes} from '../../../src/db/statements.js'
import {inWriteTransaction, sendBatch} from '../../../src/db/write-transaction.js'
import {safeError} from '../../../src/log/safe-error.js'
import {forEachBackend} from '../../helpers/backends.js'
import {rejectsWith} from '../../helpers/fixtures.js'

const TABLE = 'write_transaction_probe'

describe('write transactions sent in batches', function () {
  forEachBackend((backend) => {
    let db: Db

    before(async function () {
      db = createDb(backend.config().database)
      await readServerFacts(db)
      await db.schema.dropTableIfExists(TABLE)
      await db.schema.createTable(TABLE, (t) => {
        t.string('id', 36).primary()
        t.integer('n').notNullable()
      })
    })
    beforeEach(async function () {
      await db(TABLE).delete()
    })
    after(async function () {
      await db.schema.dropTableIfExists(TABLE)
      await db.destroy()
    })

    const insert = (id: string, n: number) => compile(db(TABLE).insert({id, n}))

    it('returns each statement’s rows or changed count, in order, and commits the last batch', async function () {
      const value = await inWriteTransaction(db, async (trx) => {
        const reads = new StatementBatch().add(insert('a', 1), insert('b', 2))
        const rows = reads.read({
          statement: compile(db(TABLE).orderBy('id').select('id', 'n')),
          read: (result) => result.rows.map((row) => `${row['id']}=${row['n']}`),
        })
        await reads.send(trx)
        const [updated] = await trx.send([compile(db(TABLE).where('id', 'a').update({n: 10}))])
        return {value: {rows: rows(), updated: updated!.affectedRows}, commitWith: [insert('c', 3)]}
      })
      expect(value).to.deep.equal({rows: ['a=1', 'b=2'], updated: 1})
      expect(await db(TABLE).orderBy('id').pluck('n')).to.deep.equal([10, 2, 3])
    })

    it('builds a read’s value once per send, however often its handle is called', async function () {
      let built = 0
      await inWriteTransaction(db, async (trx) => {
        await trx.send([insert('a', 1)])
        const reads = new StatementBatch()
        const ids = reads.read({statement: compile(db(TABLE).select('id')), read: (result) => (built++, result.rows.map((row) => row['id']))})
        await reads.send(trx)
        for (let i = 0; i < 5; i++) expect(ids()).to.deep.equal(['a'])
        expect(built).to.equal(1)
        await trx.send([insert('b', 2)])
        await reads.send(trx)
        expect(ids()).to.have.members(['a', 'b'])
        expect(built).to.equal(2)
        return {value: null, commitWith: []}
      })
    })

    it('rolls back every batch when a statement of the last one fails', async function () {
      const failing = inWriteTransaction(db, async (trx) => {
        await trx.send([insert('a', 1)])
        // The duplicate id fails the batch after 'b' is inserted: the COMMIT after it never runs.
        return {value: null, commitWith: [insert('b', 2), insert('a', 3), insert('c', 4)]}
      })
      const error = await rejectsWith(failing, Error)
      // The log names the statement of the batch that failed, by its verb and table alone.
      expect(safeError(error)).to.include({statement: `INSERT INTO ${TABLE}`})
      expect(JSON.stringify(safeError(error))).to.not.include("'a'")
      expect(await db(TABLE).count({n: '*'})).to.deep.equal([{n: 0}])
      // The connection went back to the pool in a usable state.
      await inWriteTransaction(db, async () => ({value: null, commitWith: [insert('d', 5)]}))
      expect(await db(TABLE).pluck('id')).to.deep.equal(['d'])
    })

    it('goes on in the same transaction when the outcome takes the refusal of its last batch (orElse)', async function () {
      const seen: unknown[] = []
      const value = await inWriteTransaction(db, async () => ({
        value: 'first',
        // 'a' is inserted, the duplicate 'a' is refused, and 'b' and the COMMIT never run.
        commitWith: [insert('a', 1), insert('a', 2), insert('b', 3)],
        orElse: (error) => {
          seen.push(error)
          return Promise.resolve({value: 'instead', commitWith: [insert('c', 4)]})
        },
      }))
      expect(value).to.equal('instead')
      expect(seen).to.have.length(1)
      // What ran before the refused statement is kept and committed with what came instead.
      expect(await db(TABLE).orderBy('id').pluck('id')).to.deep.equal(['a', 'c'])
    })

    for (const {statement, mark, refusal} of [
      {statement: 'a registration whose key is taken as a guard does', mark: registration, refusal: GuardRefusal},
      {statement: 'a key claim whose key is stored with KeyClaimRefusal', mark: keyClaim, refusal: KeyClaimRefusal},
    ]) {
      it(`refuses ${statement}, and only such a statement, wherever it is in the batch`, async function () {
        const refusals: unknown[] = []
        const takeRefusal = (error: unknown) => {
          refusals.push(error)
          return Promise.resolve({value: null, commitWith: []})
        }
        await inWriteTransaction(db, async () => ({value: null, commitWith: [insert('a', 1), insert('b', 2)]}))
        // The marked statement after a statement that answered: 'c' is kept, the taken 'a' refused.
        await inWriteTransaction(db, async () => ({value: null, commitWith: [insert('c', 3), mark(insert('a', 4))], orElse: takeRefusal}))
        // A plain insert's duplicate after a marked statement that went through stays what it is.
        await inWriteTransaction(db, async () => ({value: null, commitWith: [mark(insert('d', 5)), insert('b', 6)], orElse: takeRefusal}))
        expect(refusals).to.have.length(2)
        expect(refusals[0]).to.be.instanceOf(refusal)
        expect(isUniqueViolation((refusals[0] as Error).cause)).to.equal(true)
        if (refusals[0] instanceof KeyClaimRefusal) expect(refusals[0].key).to.equal('stored')
        expect(isGuardRefusal(refusals[1]) || refusals[1] instanceof KeyClaimRefusal).to.equal(false)
        expect(isUniqueViolation(refusals[1])).to.equal(true)
        expect(await db(TABLE).orderBy('id').pluck('n')).to.deep.equal([1, 2, 3, 5])
      })
    }

    it('rolls back when the outcome does not take the refusal (orElse gives nothing)', async function () {
      const failing = inWriteTransaction(db, async () => ({value: null, commitWith: [insert('a', 1), insert('a', 2)], orElse: () => undefined}))
      await rejectsWith(failing, Error)
      expect(await db(TABLE).count({n: '*'})).to.deep.equal([{n: 0}])
    })

    it('rolls back when the work throws between batches', async function () {
      const failing = inWriteTransaction(db, async (trx) => {
        await trx.send([insert('a', 1)])
        throw new Error('the request was refused half-way')
      })
      await rejectsWith(failing, Error)
      expect(await db(TABLE).count({n: '*'})).to.deep.equal([{n: 0}])
    })

    it('commits writes sent ahead with the rest, in the order they were sent', async function () {
      await inWriteTransaction(db, async (trx) => {
        await trx.send([insert('a', 1)])
        trx.sendAhead([insert('b', 2), compile(db(TABLE).where('id', 'a').update({n: 10}))])
        return {value: null, commitWith: [compile(db(TABLE).where('id', 'b').update({n: 20})), insert('c', 3)]}
      })
      expect(await db(TABLE).orderBy('id').pluck('n')).to.deep.equal([10, 20, 3])
    })

    it('writes statements out ahead (format) that send as they would have, beside bound ones in one batch', async function () {
      // A question mark and quotes inside a value: written out, they must not be read as placeholders.
      const awkward = `why?'"\\ ? é`
      await inWriteTransaction(db, async (trx) => {
        const written = trx.format([insert(awkward, 1), insert('b', 2)])
        if (backend.name === 'mysql') {
          expect(written.map((statement) => statement.bindings)).to.deep.equal([[], []])
          // Measured as written, so a batch's packets are sized by what is sent.
          for (const statement of written) expect(statementBytes(statement)).to.equal(Buffer.byteLength(statement.sql))
        }
        trx.sendAhead([written[0]!, insert('c', 3), written[1]!])
        return {value: null, commitWith: [compile(db(TABLE).where('id', awkward).update({n: 10}))]}
      })
      expect(await db(TABLE).orderBy('n').select('id', 'n')).to.deep.equal([
        {id: 'b', n: 2},
        {id: 'c', n: 3},
        {id: awkward, n: 10},
      ])
    })

    it('rolls back everything, and reports the failure, when a write sent ahead fails', async function () {
      const failing = inWriteTransaction(db, async (trx) => {
        await trx.send([insert('a', 1)])
        trx.sendAhead([insert('b', 2), insert('a', 3)])
        // Built while the database runs what went ahead; it must not commit without it.
        await new Promise((resolve) => setTimeout(resolve, 20))
        return {value: null, commitWith: [insert('c', 4)]}
      })
      const error = await rejectsWith(failing, Error)
      expect(error.message).to.match(/duplicate|unique/i)
      expect(await db(TABLE).count({n: '*'})).to.deep.equal([{n: 0}])
      await inWriteTransaction(db, async () => ({value: null, commitWith: [insert('d', 5)]}))
      expect(await db(TABLE).pluck('id')).to.deep.equal(['d'])
    })

    it("sends a batch larger than the server's packet in several round trips, in order, in one transaction", async function () {
      this.timeout(60_000)
      // 5 MiB of quotes is 10 MiB once escaped: two of them overflow MariaDB's default 16 MiB packet.
      const quotes = "'".repeat(5 * 1024 * 1024)
      const measure = {sql: 'SELECT LENGTH(?) AS n', bindings: [quotes]}
      const lengths = await inWriteTransaction(db, async (trx) => {
        const results = await trx.send([insert('a', 1), measure, measure, compile(db(TABLE).where('id', 'a').update({n: 2}))])
        // What is sent after a batch that goes in several packets runs after all of them.
        trx.sendAhead([measure, measure, insert('b', 3)])
        return {
          value: results.map((result) => Number(result.rows[0]?.['n'] ?? result.affectedRows)),
          commitWith: [compile(db(TABLE).where('id', 'b').update({n: 4}))],
        }
      })
      expect(lengths).to.deep.equal([1, quotes.length, quotes.length, 1])
      expect(await db(TABLE).orderBy('id').select('id', 'n')).to.deep.equal([
        {id: 'a', n: 2},
        {id: 'b', n: 4},
      ])
    })

    // SQLite runs in-process, with no COMMIT round trip to overlap.
    if (backend.name === 'mysql') {
      it('says when only the COMMIT is left of a transaction (committing), before the COMMIT answers', async function () {
        // Another transaction holds row 'x': the work's last statement before the COMMIT waits for
        // it, so `committing` must come only once that lock is given up, and before the end.
        await db(TABLE).insert({id: 'x', n: 1})
        const holder = await db.transaction()
        await holder(TABLE).where('id', 'x').forUpdate().select('id')
        const events: string[] = []
        const write = inWriteTransaction(db, async () => ({value: null, commitWith: [compile(db(TABLE).where('id', 'x').update({n: 2}))]}), {
          committing: () => events.push('committing'),
        }).then(() => events.push('committed'))
        await new Promise((resolve) => setTimeout(resolve, 100))
        expect(events).to.deep.equal([])
        await holder.commit()
        await write
        expect(events).to.deep.equal(['committing', 'committed'])
        expect(await db(TABLE).where('id', 'x').pluck('n')).to.deep.equal([2])
      })
    }

    it('sends a batch outside a transaction, each statement committing on its own', async function () {
      const results = await sendBatch(db, [insert('a', 1), compile(db(TABLE).select('id'))])
      expect(results.map((result) => result.rows.length)).to.deep.equal([0, 1])
      await rejectsWith(sendBatch(db, [insert('b', 2), insert('a', 9), insert('c', 3)]), Error)
      expect(await db(TABLE).orderBy('id').pluck('id')).to.deep.equal(['a', 'b'])
    })
  })
})
