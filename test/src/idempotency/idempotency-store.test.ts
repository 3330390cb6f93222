import {randomUUID} from 'node:crypto'

import {expect} from 'chai'
import type {Knex} from 'knex'

import {KeyClaimRefusal} from '../../../src/db/errors.js'
import {createDb, type Db, readServerFacts} from '../../../src/db/knex.js'
import {runEach, type Statement} from '../../../src/db/statements.js'
import {type IdempotencyRecord, IdempotencyStore} from '../../../src/idempotency/idempotency-store.js'
import {backends, describeInMysqlRun} from '../../helpers/backends.js'

const ENDPOINT = 'POST /claims-probe'

/** Sends statements one by one in the transaction, as a write does; rejects with the first one's error. */
async function send(trx: Knex.Transaction, statements: readonly Statement[]): Promise<void> {
  await runEach(trx, statements)
}

/** Why a claim was refused: a KeyClaimRefusal's key (a test failure when it was accepted, or failed otherwise). */
async function refusalOf(promise: Promise<unknown>): Promise<KeyClaimRefusal['key']> {
  const error = await promise.then(
    () => expect.fail('the claim was accepted'),
    (error: unknown) => error,
  )
  expect(error).to.be.instanceOf(KeyClaimRefusal)
  return (error as KeyClaimRefusal).key
}

describeInMysqlRun('Idempotency-Key claims on MySQL', function () {
  const backend = backends().find((each) => each.name === 'mysql')!
  let asked: Db
  let unasked: Db
  // A customer of its own, so the keys sort among no other test's.
  const customerId = randomUUID()

  before(async function () {
    // The daemon asks its server at start (openBacking): on MariaDB its claims are inserts with no
    // lock wait. A handle that was not asked claims as on MySQL 8, with a NOWAIT read first; on
    // MariaDB, which has both, the two forms must answer alike.
    asked = createDb(backend.config().database)
    await readServerFacts(asked)
    unasked = createDb(backend.config().database)
  })
  after(async function () {
    await asked.destroy()
    await unasked.destroy()
  })

  const record = (key: string): IdempotencyRecord => ({
    customerId,
    endpoint: ENDPOINT,
    key,
    requestHash: 'h'.repeat(64),
    statusCode: null,
    responseBody: null,
    claimedAt: Date.now(),
    expiresAt: Date.now() + 60_000,
  })

  it('claims a key on MariaDB with its insert alone, under no lock wait', function () {
    const [insert, ...rest] = new IdempotencyStore(asked).claimStatements([record('shape')])
    expect(rest).to.deep.equal([])
    expect(insert!.sql).to.match(/^SET STATEMENT innodb_lock_wait_timeout=0 FOR INSERT INTO `idempotency_keys`/)
    const [read, write] = new IdempotencyStore(unasked).claimStatements([record('shape')])
    expect(read!.sql).to.match(/FOR UPDATE NOWAIT$/)
    expect(write!.sql).to.match(/^INSERT INTO `idempotency_keys`/)
  })

  for (const form of ['asked', 'unasked'] as const) {
    describe(`claimed as a handle ${form === 'asked' ? 'that asked its server' : 'that did not ask its server'}`, function () {
      const store = () => new IdempotencyStore(form === 'asked' ? asked : unasked)
      const db = () => (form === 'asked' ? asked : unasked)

      it('is refused at once while another transaction holds the key, and as a duplicate once it is stored', async function () {
        const key = `held-${form}`
        const holder = await db().transaction()
        try {
          await send(holder, store().claimStatements([record(key)]))
          const retry = await db().transaction()
          try {
            // InnoDB's lock wait is 50 s: only a claim that does not wait ends within the test's time.
            expect(await refusalOf(send(retry, store().claimStatements([record(key)])))).to.equal('held')
          } finally {
            await retry.rollback()
          }
          await holder.commit()
        } catch (error) {
          if (!holder.isCompleted()) await holder.rollback()
          throw error
        }
        const later = await db().transaction()
        try {
          expect(await refusalOf(send(later, store().claimStatements([record(key)])))).to.equal('stored')
        } finally {
          await later.rollback()
        }
      })

      it('takes a new key beside one whose duplicate another transaction has just met', async function () {
        const stored = `m-stored-${form}`
        const first = await db().transaction()
        await send(first, store().claimStatements([record(stored)]))
        await first.commit()
        const replay = await db().transaction()
        try {
          // The replay's duplicate check locks the stored key's record; the gap before it stays free.
          expect(await refusalOf(send(replay, store().claimStatements([record(stored)])))).to.equal('stored')
          const neighbour = await db().transaction()
          try {
            await send(neighbour, store().claimStatements([record(`m-new-${form}`)]))
          } finally {
            await neighbour.rollback()
          }
        } finally {
          await replay.rollback()
        }
      })
    })
  }
})
