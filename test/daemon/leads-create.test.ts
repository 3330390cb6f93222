import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {EventsStore} from '../../src/events/events-store.js'
import {counts, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'

describe('POST /api/agents/crm/leads', function () {
  forEachBackend((backend) => {
    for (const guess of ['on', 'off'] as const) {
      describe(`with LEADS_CREATE_GUESS=${guess}`, function () {
        let daemon: TestDaemon
        let tenant: TestTenant
        const create = (body: unknown, key?: string, as: TestTenant = tenant) => postJson(daemon, as, CREATE, body, key)

        before(async function () {
          daemon = await startTestDaemon(backend, {}, {LEADS_CREATE_GUESS: guess})
        })
        beforeEach(async function () {
          tenant = await newTenant(daemon.services)
          await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
          await daemon.services.customers.addField(tenant.customer.id, {slug: 'notes', type: 'string'})
        })
        after(async function () {
          await daemon.stop()
        })

        describe('creating', function () {
          it('uses the stages and fields as they are now, after an operator changed them (single and bulk)', async function () {
            const id = tenant.customer.id
            // The first create keeps the customer's definitions; every later one must see the changes.
            expect((await create({contact_name: 'Before', custom_fields: {flavour: 'plain'}})).body.unknown_custom_fields).to.deep.equal(['flavour'])
            await daemon.services.customers.addField(id, {slug: 'flavour', type: 'string'})
            const added = await create({contact_name: 'Added', custom_fields: {flavour: 'mint'}})
            expect(added.body.unknown_custom_fields).to.deep.equal([])
            expect(added.body.lead.custom_fields).to.include({flavour: 'mint'})
            const bulk = await postJson(daemon, tenant, `${CREATE}/bulk`, {leads: [{contact_name: 'Bulk', custom_fields: {flavour: 'lime'}}]})
            expect(bulk.body.unknown_custom_fields).to.deep.equal([])
            await daemon.services.customers.removeField(id, 'flavour')
            expect((await create({contact_name: 'Removed', custom_fields: {flavour: 'mint'}})).body.unknown_custom_fields).to.deep.equal(['flavour'])
            await daemon.services.customers.addStage(id, {slug: 'vip', name: 'VIP'})
            const staged = await create({contact_name: 'Staged', stage_slug: 'vip'})
            expect(staged.status).to.equal(201)
            expect(staged.body.lead.current_stage.slug).to.equal('vip')
          })

          it('creates a lead with the contract defaults and records one lead.created event', async function () {
            const response = await create({
              contact_name: 'Ada Lovelace',
              contact_email: '  ada@example.org  ',
              custom_fields: {budget: 500000, lead_line: 'buyer'},
            })
            expect(response.status).to.equal(201)
            expect(response.body).to.have.keys(['lead', 'merged', 'unknown_custom_fields'])
            expect(response.body.merged).to.equal(false)
            expect(response.body.unknown_custom_fields).to.deep.equal([])
            const lead = response.body.lead
            expect(lead).to.include({
              customer_id: tenant.customer.id,
              contact_name: 'Ada Lovelace',
              contact_email: 'ada@example.org',
              contact_phone: null,
              source_platform: 'direct',
              source_type: 'manual',
              status: 'active',
              score: null,
              qualified: null,
              owner: null,
              last_interaction_at: null,
              interaction_count: 0,
            })
            expect(lead.created_at).to.equal(lead.updated_at)
            expect(lead.current_stage).to.deep.equal({id: tenant.stages[0]!.id, slug: 'new', name: 'New', color: tenant.stages[0]!.color})
            expect(lead.custom_fields).to.deep.equal({budget: 500000, lead_line: 'buyer'})

            const events = await new EventsStore(daemon.db).listForLead(tenant.customer.id, lead.id)
            expect(events).to.have.length(1)
            expect(events[0]!.type).to.equal('lead.created')
            expect(events[0]!.payload).to.deep.equal({
              id: lead.id,
              contact_name: 'Ada Lovelace',
              contact_phone: null,
              contact_email: 'ada@example.org',
              source_platform: 'direct',
              source_type: 'manual',
              lead_line: 'buyer',
              current_stage: {slug: 'new', name: 'New'},
              custom_fields: {budget: 500000, lead_line: 'buyer'},
              created_at: lead.created_at,
              updated_at: lead.updated_at,
            })
          })

          it('places the lead in stage_slug and keeps the given source', async function () {
            const response = await create({contact_phone: '555 010 3000', stage_slug: 'qualified', source_platform: 'zillow', source_type: 'phone_call'})
            expect(response.status).to.equal(201)
            expect(response.body.lead.current_stage.slug).to.equal('qualified')
            expect(response.body.lead).to.include({source_platform: 'zillow', source_type: 'phone_call'})
          })

          it('drops unknown custom fields and lists them', async function () {
            const response = await create({contact_name: 'Fields', custom_fields: {budget: 1, colour: 'red', size: null}})
            expect(response.status).to.equal(201)
            expect(response.body.lead.custom_fields).to.deep.equal({budget: 1})
            expect(response.body.unknown_custom_fields).to.deep.equal(['colour', 'size'])
          })

          it('drops an unknown custom field whatever text it holds, and refuses that text in a known one', async function () {
            // A renamed field must never lose the lead: its value is dropped, however it was written.
            const dropped = await create('{"contact_name": "Odd Text", "custom_fields": {"budget": 3, "renamed": "a\\u0001b", "old": {"deep": "\\ud800"}}}')
            expect(dropped.status, dropped.text).to.equal(201)
            expect(dropped.body.lead.custom_fields).to.deep.equal({budget: 3})
            expect(dropped.body.unknown_custom_fields).to.deep.equal(['renamed', 'old'])
            const refused = await create('{"contact_name": "Odd Note", "custom_fields": {"notes": "a\\u0001b"}}')
            expect(refused.status, refused.text).to.equal(400)
            expect(refused.body.error).to.include({
              param: 'custom_fields.notes',
              message: 'field "custom_fields.notes" contains a control character (only tab and line breaks are allowed)',
            })
            // A slug is a name: one that is not well-formed text is no field anyone defined, and is refused.
            const badSlug = await create('{"contact_name": "Odd Slug", "custom_fields": {"re\\u0001named": 1}}')
            expect(badSlug.status, badSlug.text).to.equal(400)
          })

          it('drops an unknown custom field whatever its number, one past a double (1e400) included, and names a known field given one', async function () {
            // JSON allows any number; 1e400 parses to Infinity, which no field can hold.
            const response = await create('{"contact_name": "Huge", "custom_fields": {"budget": 2, "reading": 1e400, "depth": -1e400}}')
            expect(response.status, response.text).to.equal(201)
            expect(response.body.lead.custom_fields).to.deep.equal({budget: 2})
            expect(response.body.unknown_custom_fields).to.deep.equal(['reading', 'depth'])
            const known = await create('{"contact_name": "Huge budget", "custom_fields": {"budget": 1e400}}')
            expect(known.status).to.equal(400)
            expect(known.body.error).to.include({param: 'custom_fields.budget', message: 'custom_fields.budget must be a number or null'})
          })
        })

        describe('validation', function () {
          for (const [label, body, param, pattern] of [
            ['an unknown top-level field', {contact_name: 'x', nickname: 'y'}, 'nickname', /unknown field "nickname"/],
            ['no contact field', {stage_slug: 'new'}, 'contact_name', /at least one of contact_name, contact_phone, contact_email/],
            ['only empty contact fields', {contact_name: '  ', contact_email: ''}, 'contact_name', /at least one of/],
            ['a bad email', {contact_email: 'not-an-email'}, 'contact_email', /email address/],
            ['a phone without digits', {contact_phone: 'call me'}, 'contact_phone', /digits/],
            ['an unknown source_platform', {contact_name: 'x', source_platform: 'myspace'}, 'source_platform', /must be one of direct, referral/],
            ['an unknown source_type', {contact_name: 'x', source_type: 'fax'}, 'source_type', /must be one of form/],
            ['an unknown stage_slug', {contact_name: 'x', stage_slug: 'won'}, 'stage_slug', /valid: new, contacted, qualified, proposal, closed/],
            ['a wrongly typed custom field', {contact_name: 'x', custom_fields: {budget: 'lots'}}, 'custom_fields.budget', /must be a number/],
            ['a bad lead_line', {contact_name: 'x', custom_fields: {lead_line: 'renter'}}, 'custom_fields.lead_line', /buyer, seller or null/],
            [
              'an object as a known custom field',
              {contact_name: 'x', custom_fields: {notes: {a: 1}}},
              'custom_fields.notes',
              /custom_fields.notes must be a string or null/,
            ],
            ['a number as name', {contact_name: 42}, 'contact_name', /string/],
            ['an over-long name', {contact_name: 'x'.repeat(201)}, 'contact_name', /at most 200/],
          ] as const) {
            it(`rejects ${label} with 400 naming ${param}, and stores nothing`, async function () {
              const response = await create(body)
              expect(response.status).to.equal(400)
              expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param})
              expect(response.body.error.message).to.match(pattern)
              expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
            })
          }

          for (const body of ['[]', '"text"', 'null', '42']) {
            it(`rejects the body ${body} with 400`, async function () {
              const response = await create(body)
              expect(response.status).to.equal(400)
              expect(response.body.error.type).to.equal('invalid_request_error')
            })
          }

          it('rejects a POST without a body with 400', async function () {
            const response = await daemon.request(CREATE, {method: 'POST', token: tenant.token, customerId: tenant.customer.id})
            expect(response.status).to.equal(400)
          })
        })

        describe('merging', function () {
          it('merges by email case-insensitively and emits nothing', async function () {
            const first = await create({contact_name: 'Ada', contact_email: 'Ada@Example.org', custom_fields: {budget: 1, notes: 'first'}})
            const second = await create({contact_email: ' ada@EXAMPLE.org', contact_phone: '555-010-2000', custom_fields: {budget: 2}})
            expect(second.status).to.equal(201)
            expect(second.body.merged).to.equal(true)
            const lead = second.body.lead
            expect(lead.id).to.equal(first.body.lead.id)
            expect(lead).to.include({contact_name: 'Ada', contact_email: 'ada@EXAMPLE.org', contact_phone: '555-010-2000'})
            expect(lead.custom_fields).to.deep.equal({budget: 2, notes: 'first'})
            expect(lead.created_at).to.equal(first.body.lead.created_at)
            expect(Date.parse(lead.updated_at)).to.be.greaterThan(Date.parse(first.body.lead.updated_at))
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
          })

          for (const [stored, sent] of [
            ['+1 (555) 010-2000', '5550102000'],
            ['5550102000', '+1 (555) 010-2000'],
            ['555.010.2000', '1-555-010-2000'],
            ['+44 555 010 2000', '(555) 0102000'],
            ['+1 (555) 010-2000', '＋１ （５５５） ０１０-２０００'],
            ['٥٥٥٠١٠٢٠٠٠', '555 010 2000'],
          ]) {
            it(`merges ${sent} into ${stored} by the last 10 digits`, async function () {
              const first = await create({contact_name: 'Phone', contact_phone: stored})
              const second = await create({contact_phone: sent, stage_slug: 'contacted'})
              expect(second.body).to.include({merged: true})
              expect(second.body.lead.id).to.equal(first.body.lead.id)
              expect(second.body.lead.current_stage.slug).to.equal('contacted')
              expect(second.body.lead.contact_name).to.equal('Phone')
            })
          }

          it('prefers an email match over a phone match', async function () {
            const byPhone = await create({contact_name: 'Phone owner', contact_phone: '5550104000'})
            const byEmail = await create({contact_name: 'Email owner', contact_email: 'owner@example.org'})
            const both = await create({contact_email: 'OWNER@example.org', contact_phone: '(555) 010-4000'})
            expect(both.body.merged).to.equal(true)
            expect(both.body.lead.id).to.equal(byEmail.body.lead.id)
            expect(both.body.lead.id).not.to.equal(byPhone.body.lead.id)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 2, events: 2})
          })

          it('merges into a lead with an owner at once and answers with the owner', async function () {
            // SQLite has one connection, held by the write's transaction: a read from the pool would wait for it.
            this.timeout(5000)
            const ownerId = randomUUID()
            await daemon.db('owners').insert({id: ownerId, customer_id: tenant.customer.id, name: 'Olive Owner', role_name: 'Agent', created_at: Date.now()})
            const owned = leadRecord(tenant, {contactName: 'Owned', contactEmail: 'owned@example.org', ownerId})
            await insertLeads(daemon.db, [owned])
            const response = await create({contact_email: 'OWNED@example.org', contact_phone: '555 010 4100'})
            expect(response.status).to.equal(201)
            expect(response.body.merged).to.equal(true)
            expect(response.body.lead).to.include({id: owned.id, contact_name: 'Owned', contact_phone: '555 010 4100'})
            expect(response.body.lead.owner).to.deep.equal({id: ownerId, name: 'Olive Owner', role_name: 'Agent'})
            // A create of a new person right after is not held up either.
            expect((await create({contact_email: 'next@example.org'})).status).to.equal(201)
          })

          it("never merges into another customer's lead", async function () {
            const other = await newTenant(daemon.services)
            await create({contact_email: 'shared@example.org'}, undefined, other)
            const mine = await create({contact_email: 'shared@example.org'})
            expect(mine.body.merged).to.equal(false)
            expect(mine.body.lead.customer_id).to.equal(tenant.customer.id)
          })
        })

        describe('concurrency', function () {
          it('ends 12 simultaneous creates of one email as one lead and one event', async function () {
            const responses = await Promise.all(Array.from({length: 12}, (_, i) => create({contact_name: `Racer ${i}`, contact_email: 'race@example.org'})))
            expect(responses.map((r) => r.status)).to.deep.equal(Array(12).fill(201))
            expect(new Set(responses.map((r) => r.body.lead.id)).size).to.equal(1)
            expect(responses.filter((r) => r.body.merged === false)).to.have.length(1)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
          })

          it('ends simultaneous creates of one phone in different formats as one lead', async function () {
            const formats = ['+1 (555) 010-5000', '5550105000', '555.010.5000', '1-555-010-5000', '(555) 010 5000', '+15550105000']
            const responses = await Promise.all(formats.map((phone) => create({contact_phone: phone})))
            expect(new Set(responses.map((r) => r.body.lead.id)).size).to.equal(1)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
          })

          it('ends simultaneous creates sharing only a phone (different emails) as one lead', async function () {
            const responses = await Promise.all(
              Array.from({length: 8}, (_, i) => create({contact_email: `person${i}@example.org`, contact_phone: '555 010 6000'})),
            )
            expect(responses.every((r) => r.status === 201)).to.equal(true)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 1, events: 1})
          })

          it('keeps different people apart under the same load', async function () {
            const responses = await Promise.all(Array.from({length: 16}, (_, i) => create({contact_email: `solo${i}@example.org`})))
            expect(new Set(responses.map((r) => r.body.lead.id)).size).to.equal(16)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 16, events: 16})
          })
        })

        describe('creates written together (group commit)', function () {
          /** Sends the bodies at once over HTTP, each under its own Idempotency-Key. */
          const together = (bodies: unknown[], prefix: string) => Promise.all(bodies.map((body, i) => create(body, `${prefix}-${i}`)))

          it('resolves the creates of one group in arrival order: one person once, a refusal alone', async function () {
            const write = (body: unknown) => daemon.services.leadsWrite.create(tenant.customer.id, body)
            // The first two take the free slots; the rest arrive while those are written and go as one group.
            const outcomes = await Promise.allSettled([
              write({contact_name: 'Filler 1'}),
              write({contact_name: 'Filler 2'}),
              write({contact_name: 'First', contact_email: 'same@example.org', custom_fields: {budget: 1}}),
              write({contact_name: 'Bad stage', stage_slug: 'nope'}),
              write({contact_name: 'Second', contact_email: 'SAME@example.org', custom_fields: {notes: 'later'}}),
              write({contact_name: 'Third', contact_phone: '555 030 0000'}),
            ])
            const [, , first, refused, second, third] = outcomes
            if (first?.status !== 'fulfilled' || second?.status !== 'fulfilled' || third?.status !== 'fulfilled') throw new Error('a create failed')
            expect(refused?.status === 'rejected' && (refused.reason as {param?: string}).param).to.equal('stage_slug')
            expect([first.value.merged, second.value.merged, third.value.merged]).to.deep.equal([false, true, false])
            expect(second.value.lead.id).to.equal(first.value.lead.id)
            // Each answer is the lead as its own create left it.
            expect(first.value.lead).to.include({contactName: 'First'})
            expect(first.value.lead.customFields).to.deep.equal({budget: 1})
            expect(second.value.lead).to.include({contactName: 'Second'})
            expect(second.value.lead.customFields).to.deep.equal({budget: 1, notes: 'later'})
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 4, events: 4})
            const events = await new EventsStore(daemon.db).listForLead(tenant.customer.id, first.value.lead.id)
            expect(events.map((event) => (event.payload as {contact_name: string}).contact_name)).to.deep.equal(['First'])
          })

          it('answers each create of a burst as if it were sent alone: refusals alone, one person once, every key replayable', async function () {
            const bodies = [
              {contact_name: 'First', contact_email: 'same@example.org'},
              {contact_name: 'Bad stage', stage_slug: 'nope'},
              {contact_name: 'Second', contact_email: 'SAME@example.org', custom_fields: {notes: 'later'}},
              {contact_name: 'Wrong type', custom_fields: {budget: 'lots'}},
              ...Array.from({length: 16}, (_, i) => ({contact_name: `Other ${i}`, contact_phone: `555 020 ${String(i).padStart(4, '0')}`})),
            ]
            const responses = await together(bodies, 'burst')
            expect(responses.map((r) => r.status)).to.deep.equal([201, 400, 201, 400, ...Array(16).fill(201)])
            expect(responses[1]!.body.error).to.include({type: 'invalid_request_error', code: 400, param: 'stage_slug'})
            expect(responses[3]!.body.error).to.include({code: 400, param: 'custom_fields.budget'})
            // Whichever of the two came first created the lead; the other merged into it.
            const [first, second] = [responses[0]!.body, responses[2]!.body]
            expect(first.lead.id).to.equal(second.lead.id)
            expect([first.merged, second.merged].sort()).to.deep.equal([false, true])
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 17, events: 17})

            const replays = await together(bodies, 'burst')
            expect(replays.map((r) => r.headers.get('idempotent-replayed'))).to.deep.equal(Array(bodies.length).fill('true'))
            expect(replays.map((r) => r.text)).to.deep.equal(responses.map((r) => r.text))
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 17, events: 17})
          })

          it('keeps the other creates of a burst when one key was used before with another body', async function () {
            expect((await create({contact_name: 'Original'}, 'burst-reused-0')).status).to.equal(201)
            const bodies = [{contact_name: 'Another body'}, ...Array.from({length: 11}, (_, i) => ({contact_email: `burst${i}@example.org`}))]
            const responses = await together(bodies, 'burst-reused')
            expect(responses.map((r) => r.status)).to.deep.equal([409, ...Array(11).fill(201)])
            expect(responses[0]!.body.error.message).to.match(/different request body/)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 12, events: 12})
          })
        })
      })
    }
  })
})
