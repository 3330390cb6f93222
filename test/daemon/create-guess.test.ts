import {expect} from 'chai'

import {up as registerStoredKeys} from '../../migrations/20261129000000_register_match_keys_of_stored_leads.js'
import {observeStatements} from '../../src/db/statement-observer.js'
import {counts, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, openServices, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'

/**
 * Single creates written as new people in one round trip (create-guess.ts, LEADS_CREATE_GUESS):
 * the guess must never change an answer. Each test arms the guess with a first create (which is
 * written checked and keeps the customer's setup and subscribers), then changes what the guess
 * assumes behind the daemon's back.
 */
describe('single creates guessed to be new people', function () {
  forEachBackend((backend) => {
    for (const guess of ['on', 'off'] as const) {
      describe(`with LEADS_CREATE_GUESS=${guess}`, function () {
        let daemon: TestDaemon
        let tenant: TestTenant
        const create = (body: unknown, key?: string) => postJson(daemon, tenant, CREATE, body, key)
        const written = () => ({...daemon.services.leadsWrite.groupsWritten})
        /** How many of each way groups were written since `before` (with the guess off, every group is checked). */
        const since = (before: ReturnType<typeof written>) => {
          const now = written()
          return {asNew: now.asNew - before.asNew, checked: now.checked - before.checked, guessRefused: now.guessRefused - before.guessRefused}
        }
        const deliveriesOf = async (leadId: string) => {
          const rows = (await daemon
            .db('deliveries')
            .join('events', 'events.id', 'deliveries.event_id')
            .where({'deliveries.customer_id': tenant.customer.id, 'events.customer_id': tenant.customer.id, 'events.lead_id': leadId})
            .select('deliveries.webhook_id')) as Array<{webhook_id: string}>
          return rows.map((row) => row.webhook_id).sort()
        }

        before(async function () {
          daemon = await startTestDaemon(backend, {}, {LEADS_CREATE_GUESS: guess})
        })
        beforeEach(async function () {
          tenant = await newTenant(daemon.services, undefined, {roomy: true})
        })
        after(async function () {
          await daemon.stop()
        })

        it('writes a new person in one round trip once the customer has been written to', async function () {
          const before = written()
          expect((await create({contact_name: 'First', contact_email: 'first@example.org'})).status).to.equal(201)
          const second = await create({contact_name: 'Second', contact_email: 'second@example.org'}, 'second-key')
          expect(second.status).to.equal(201)
          expect(second.body.merged).to.equal(false)
          expect(since(before)).to.deep.equal(guess === 'on' ? {asNew: 1, checked: 1, guessRefused: 0} : {asNew: 0, checked: 2, guessRefused: 0})
          const replay = await create({contact_name: 'Second', contact_email: 'second@example.org'}, 'second-key')
          expect(replay.headers.get('idempotent-replayed')).to.equal('true')
          expect(replay.text).to.equal(second.text)
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 2, events: 2})
        })

        it('merges a person stored already, with nothing of the refused guess left behind', async function () {
          const first = await create({contact_name: 'Ada', contact_email: 'ada@example.org', custom_fields: {lead_line: 'buyer'}})
          await create({contact_name: 'Grace', contact_phone: '+1 (555) 010-2000'})
          const before = written()
          // Same email (other case, spaces): the guess is refused and the create merges, in the
          // same transaction: its keys' claims and registrations hold, and nothing is rolled back.
          const sent: string[] = []
          const unobserve = observeStatements((sql) => sent.push(sql))
          const merged = await create({contact_name: 'Ada L.', contact_email: '  ADA@example.org '}, 'merge-key').finally(unobserve)
          expect(sent.filter((sql) => /^\s*rollback/i.test(sql))).to.deep.equal([])
          expect(merged.status).to.equal(201)
          expect(merged.body.merged).to.equal(true)
          expect(merged.body.lead.id).to.equal(first.body.lead.id)
          expect(merged.body.lead.contact_name).to.equal('Ada L.')
          expect(merged.body.lead.custom_fields).to.include({lead_line: 'buyer'})
          // Same last 10 phone digits, other formatting.
          const byPhone = await create({contact_name: 'Grace H.', contact_phone: '555.010.2000'})
          expect(byPhone.body.merged).to.equal(true)
          expect(since(before)).to.deep.equal(guess === 'on' ? {asNew: 0, checked: 1, guessRefused: 1} : {asNew: 0, checked: 2, guessRefused: 0})
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 2, events: 2})
          const replay = await create({contact_name: 'Ada L.', contact_email: '  ADA@example.org '}, 'merge-key')
          expect(replay.text).to.equal(merged.text)
          expect(replay.headers.get('idempotent-replayed')).to.equal('true')
          // After a merge the next create is checked, and the one after it is guessed again.
          const again = written()
          await create({contact_name: 'New one', contact_email: 'new-one@example.org'})
          await create({contact_name: 'New two', contact_email: 'new-two@example.org'})
          expect(since(again)).to.deep.equal(guess === 'on' ? {asNew: 1, checked: 1, guessRefused: 0} : {asNew: 0, checked: 2, guessRefused: 0})
        })

        it('creates a new person with an email a stored lead had before a merge replaced it', async function () {
          await create({contact_name: 'Ada', contact_email: 'ada-old@example.org', contact_phone: '+1 555 030 0001'})
          const merged = await create({contact_name: 'Ada', contact_email: 'ada-new@example.org', contact_phone: '+1 555 030 0001'})
          expect(merged.body.merged).to.equal(true)
          // A create of someone new after the merge arms the guess again.
          await create({contact_name: 'Someone new', contact_email: 'someone-new@example.org'})
          const before = written()
          // The old email's key is registered, though no lead has it any more: the guess is refused, and the person is new.
          const reused = await create({contact_name: 'Not Ada', contact_email: 'ada-old@example.org'})
          expect(reused.status).to.equal(201)
          expect(reused.body.merged).to.equal(false)
          expect(since(before)).to.deep.equal(guess === 'on' ? {asNew: 0, checked: 0, guessRefused: 1} : {asNew: 0, checked: 1, guessRefused: 0})
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 3, events: 3})
        })

        it('merges into a lead stored without its match keys registered, once the migration registered them', async function () {
          const stored = await create({contact_name: 'Stored', contact_email: 'stored@example.org', contact_phone: '+1 555 030 0002'})
          // As a lead stored otherwise than by a write that locked its keys (a phone whose keys were read again, say).
          await daemon.db('lead_match_locks').where({customer_id: tenant.customer.id}).delete()
          await registerStoredKeys(daemon.db)
          await create({contact_name: 'Arms the guess', contact_email: 'arms@example.org'})
          const byEmail = await create({contact_name: 'Stored again', contact_email: 'STORED@example.org'})
          const byPhone = await create({contact_name: 'Stored by phone', contact_phone: '(555) 030-0002'})
          expect([byEmail.body.merged, byPhone.body.merged]).to.deep.equal([true, true])
          expect([byEmail.body.lead.id, byPhone.body.lead.id]).to.deep.equal([stored.body.lead.id, stored.body.lead.id])
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 2, events: 2})
        })

        it('delivers to webhooks added, switched off or deleted by another process since the guess was armed', async function () {
          await create({contact_name: 'Arms the guess'})
          // Another process (its own services) changes the webhooks: nothing tells this daemon.
          const operator = await openServices(backend)
          try {
            const {webhook: created} = await operator.webhooks.create(tenant.customer.id, {url: 'https://93.184.216.34/created', event_types: ['lead.created']})
            const withHook = await create({contact_name: 'After the webhook'})
            expect(await deliveriesOf(withHook.body.lead.id)).to.deep.equal([created.id])
            const {webhook: second} = await operator.webhooks.create(tenant.customer.id, {url: 'https://93.184.216.34/second', event_types: ['lead.created']})
            const withTwo = await create({contact_name: 'After the second'})
            expect(await deliveriesOf(withTwo.body.lead.id)).to.deep.equal([created.id, second.id].sort())
            await operator.webhooks.update(tenant.customer.id, created.id, {is_active: false})
            const afterOff = await create({contact_name: 'After switching one off'})
            expect(await deliveriesOf(afterOff.body.lead.id)).to.deep.equal([second.id])
            await operator.webhooks.update(tenant.customer.id, second.id, {is_active: false})
            const none = await create({contact_name: 'With none active'})
            expect(await deliveriesOf(none.body.lead.id)).to.deep.equal([])
            const {webhook: third} = await operator.webhooks.create(tenant.customer.id, {url: 'https://93.184.216.34/third', event_types: ['lead.created']})
            expect(await deliveriesOf((await create({contact_name: 'After the third'})).body.lead.id)).to.deep.equal([third.id])
            await operator.webhooks.delete(tenant.customer.id, third.id)
            const afterDelete = await create({contact_name: 'After deleting it'})
            expect(afterDelete.status).to.equal(201)
            expect(await deliveriesOf(afterDelete.body.lead.id)).to.deep.equal([])
          } finally {
            await operator.close()
          }
        })

        it('uses a stage another process added since the guess was armed', async function () {
          await create({contact_name: 'Arms the guess'})
          const operator = await openServices(backend)
          try {
            await operator.customers.addStage(tenant.customer.id, {slug: 'vip', name: 'VIP'})
            const staged = await create({contact_name: 'Staged', stage_slug: 'vip'})
            expect(staged.status).to.equal(201)
            expect(staged.body.lead.current_stage.slug).to.equal('vip')
          } finally {
            await operator.close()
          }
        })

        it('makes one lead per person when two daemons create the same people at once', async function () {
          this.timeout(60_000)
          const other = await startTestDaemon(backend, {}, {LEADS_CREATE_GUESS: guess})
          try {
            const via = (target: TestDaemon, body: unknown) => postJson(target, tenant, CREATE, body)
            await via(daemon, {contact_name: 'Arms one'})
            await via(other, {contact_name: 'Arms two'})
            const people = Array.from({length: 30}, (_, i) =>
              i % 2
                ? {contact_name: `Person ${i}`, contact_email: `person-${i}@example.org`}
                : {contact_name: `Person ${i}`, contact_phone: `+1 555 020 ${String(i).padStart(4, '0')}`},
            )
            const answers = await Promise.all(people.flatMap((person) => [via(daemon, person), via(other, person)]))
            for (let i = 0; i < people.length; i++) {
              const [a, b] = [answers[2 * i]!, answers[2 * i + 1]!]
              expect([a.status, b.status]).to.deep.equal([201, 201])
              expect(a.body.lead.id).to.equal(b.body.lead.id)
              expect([a.body.merged, b.body.merged].sort()).to.deep.equal([false, true])
            }
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 32, events: 32})
          } finally {
            await other.stop()
          }
        })
      })
    }
  })
})
