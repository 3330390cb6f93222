import {expect} from 'chai'

import {counts, postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, openServices, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const BULK = '/api/agents/crm/leads/bulk'
const CREATE = '/api/agents/crm/leads'

describe('POST /api/agents/crm/leads/bulk', function () {
  forEachBackend((backend) => {
    for (const guess of ['on', 'off'] as const) {
      describe(`with LEADS_BULK_GUESS=${guess}`, function () {
        let daemon: TestDaemon
        let tenant: TestTenant
        const bulk = (body: unknown, key?: string) => postJson(daemon, tenant, BULK, body, key)
        const guesses = () => ({...daemon.services.leadsWrite.bulkGuesses})
        /** The guess counts after a bulk the guess was made for: used or dropped with the guess on, untouched with it off. */
        const guessed = (before: {used: number; dropped: number}, way: 'used' | 'dropped') => (guess === 'on' ? {...before, [way]: before[way] + 1} : before)

        before(async function () {
          daemon = await startTestDaemon(backend, {}, {LEADS_BULK_GUESS: guess})
        })
        beforeEach(async function () {
          tenant = await newTenant(daemon.services)
          await daemon.services.customers.addField(tenant.customer.id, {slug: 'budget', type: 'number'})
        })
        after(async function () {
          await daemon.stop()
        })

        it('creates, merges and fails rows independently, with a summary and per-row results', async function () {
          const existing = await postJson(daemon, tenant, CREATE, {contact_name: 'Existing', contact_email: 'existing@example.org'})
          const response = await bulk({
            leads: [
              {contact_name: 'New One', contact_email: 'one@example.org', custom_fields: {budget: 10}},
              {contact_email: 'EXISTING@example.org', contact_phone: '555 010 7000'},
              {contact_email: 'broken'},
              {contact_phone: '(555) 010-7000', stage_slug: 'closed'},
              {contact_name: 'Unknown fields', custom_fields: {shoe_size: 44, budget: 5, pet: 'cat'}},
              {contact_name: 'Bad budget', custom_fields: {budget: 'high'}},
            ],
          })
          expect(response.status).to.equal(200)
          expect(response.body).to.have.keys(['dry_run', 'summary', 'results', 'unknown_custom_fields'])
          expect(response.body.dry_run).to.equal(false)
          expect(response.body.summary).to.deep.equal({received: 6, created: 2, updated: 2, skipped: 0, failed: 2})
          const results = response.body.results
          expect(results.map((r: {status: string}) => r.status)).to.deep.equal(['created', 'updated', 'failed', 'updated', 'created', 'failed'])
          expect(results[1].lead_id).to.equal(existing.body.lead.id)
          expect(results[3].lead_id).to.equal(existing.body.lead.id)
          expect(results[2]).to.deep.equal({
            index: 2,
            status: 'failed',
            error: {message: 'field "contact_email" must be an email address of at most 254 characters', param: 'contact_email'},
          })
          expect(results[5].error).to.include({param: 'custom_fields.budget'})
          expect(response.body.unknown_custom_fields).to.deep.equal([
            {slug: 'shoe_size', rows: [4]},
            {slug: 'pet', rows: [4]},
          ])

          const list = await daemon.request('/api/agents/crm/leads?include_custom_fields=true&limit=100', {token: tenant.token, customerId: tenant.customer.id})
          expect(list.body.total).to.equal(3)
          const merged = list.body.leads.find((lead: {id: string}) => lead.id === existing.body.lead.id)
          expect(merged).to.include({contact_name: 'Existing', contact_phone: '(555) 010-7000', source_type: 'manual'})
          expect(merged.current_stage.slug).to.equal('closed')
          const created = list.body.leads.find((lead: {id: string}) => lead.id === results[0].lead_id)
          expect(created).to.include({source_type: 'import', source_platform: 'direct', status: 'active'})
          expect(created.custom_fields).to.deep.equal({budget: 10})
        })

        it('lists the unknown custom fields of every row that names one, failed rows too, so that one pass finds them all', async function () {
          await postJson(daemon, tenant, CREATE, {contact_name: 'Existing', contact_email: 'existing@example.org'})
          for (const dryRun of [true, false]) {
            const response = await bulk({
              dry_run: dryRun,
              on_duplicate: 'error',
              leads: [
                {contact_email: 'broken', custom_fields: {pet: 'dog'}},
                {contact_name: 'Bad budget', custom_fields: {budget: 'high', pet: 'cat', shoe_size: 44}},
                {contact_email: 'existing@example.org', custom_fields: {pet: 'fish'}},
                {contact_name: 'Fine', custom_fields: {shoe_size: 40, budget: 1}},
                {contact_name: 'No object', custom_fields: ['pet']},
                {contact_name: 'Bad slug', custom_fields: {'pe\u0000t': 1}},
              ],
            })
            expect(response.status).to.equal(200)
            expect(
              response.body.results.map((r: {status: string}) => r.status),
              String(dryRun),
            ).to.deep.equal(['failed', 'failed', 'failed', 'created', 'failed', 'failed'])
            expect(response.body.unknown_custom_fields, String(dryRun)).to.deep.equal([
              {slug: 'pet', rows: [0, 1, 2]},
              {slug: 'shoe_size', rows: [1, 3]},
            ])
          }
        })

        it('writes a row whose unknown custom field holds a number past a double (1e400), dropping the field', async function () {
          const response = await bulk(
            '{"leads": [{"contact_name": "Huge", "custom_fields": {"budget": 3, "reading": 1e400}}, {"contact_name": "Huge budget", "custom_fields": {"budget": 1e400}}]}',
          )
          expect(response.status, response.text).to.equal(200)
          expect(response.body.results.map((r: {status: string}) => r.status)).to.deep.equal(['created', 'failed'])
          expect(response.body.results[1].error).to.deep.equal({message: 'custom_fields.budget must be a number or null', param: 'custom_fields.budget'})
          expect(response.body.unknown_custom_fields).to.deep.equal([{slug: 'reading', rows: [0]}])
        })

        it('emits no lead.created event for bulk-created leads', async function () {
          await bulk({leads: [{contact_name: 'A'}, {contact_name: 'B'}, {contact_email: 'c@example.org'}]})
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 3, events: 0})
        })

        it('resolves duplicates within one request in order', async function () {
          const response = await bulk({
            leads: [
              {contact_name: 'First', contact_email: 'dup@example.org'},
              {contact_phone: '555-010-8000', contact_email: 'DUP@example.org'},
              {contact_phone: '5550108000', contact_name: 'Third'},
            ],
          })
          expect(response.body.summary).to.include({created: 1, updated: 2})
          const ids = new Set(response.body.results.map((r: {lead_id: string}) => r.lead_id))
          expect(ids.size).to.equal(1)
          const list = await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})
          expect(list.body.leads[0]).to.include({contact_name: 'Third', contact_email: 'DUP@example.org', contact_phone: '5550108000'})
        })

        it('skips duplicates with on_duplicate=skip and changes nothing of them', async function () {
          const existing = await postJson(daemon, tenant, CREATE, {contact_name: 'Keep me', contact_email: 'keep@example.org'})
          const response = await bulk({on_duplicate: 'skip', leads: [{contact_name: 'Overwrite?', contact_email: 'keep@example.org'}, {contact_name: 'Fresh'}]})
          expect(response.body.summary).to.deep.equal({received: 2, created: 1, updated: 0, skipped: 1, failed: 0})
          expect(response.body.results[0]).to.deep.equal({index: 0, status: 'skipped', lead_id: existing.body.lead.id})
          const list = await daemon.request('/api/agents/crm/leads?search=keep', {token: tenant.token, customerId: tenant.customer.id})
          expect(list.body.leads[0].contact_name).to.equal('Keep me')
          expect(list.body.leads[0].updated_at).to.equal(existing.body.lead.updated_at)
        })

        it('fails duplicates with on_duplicate=error, naming the lead and the matching field', async function () {
          const existing = await postJson(daemon, tenant, CREATE, {contact_phone: '555 010 9000'})
          const response = await bulk({on_duplicate: 'error', leads: [{contact_phone: '+1 555 010 9000'}, {contact_name: 'ok'}]})
          expect(response.body.summary).to.include({created: 1, failed: 1})
          expect(response.body.results[0]).to.deep.equal({
            index: 0,
            status: 'failed',
            error: {message: `matches existing lead ${existing.body.lead.id} by phone`, param: 'contact_phone'},
          })
        })

        it('reports a dry run without writing anything', async function () {
          await postJson(daemon, tenant, CREATE, {contact_email: 'there@example.org'})
          const before = await counts(daemon, tenant)
          const response = await bulk({
            dry_run: true,
            leads: [{contact_email: 'there@example.org', contact_name: 'Changed'}, {contact_name: 'Would be new'}, {}],
          })
          expect(response.status).to.equal(200)
          expect(response.body.dry_run).to.equal(true)
          expect(response.body.summary).to.deep.equal({received: 3, created: 1, updated: 1, skipped: 0, failed: 1})
          expect(response.body.results[1]).to.deep.equal({index: 1, status: 'created'})
          expect(await counts(daemon, tenant)).to.deep.equal(before)
          const list = await daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})
          expect(list.body.leads[0].contact_name).to.equal(null)
        })

        it('names no id in a dry run for a lead an earlier row would create, also on the rows that match it', async function () {
          const existing = await postJson(daemon, tenant, CREATE, {contact_email: 'there@example.org'})
          const leads = [
            {contact_email: 'new@example.org', contact_name: 'Would be new'},
            {contact_email: 'NEW@example.org', contact_name: 'Would merge'},
            {contact_email: 'there@example.org', contact_name: 'Existing'},
          ]
          const before = await counts(daemon, tenant)
          const expected = {
            update: [
              {index: 1, status: 'updated'},
              {index: 2, status: 'updated', lead_id: existing.body.lead.id},
            ],
            skip: [
              {index: 1, status: 'skipped'},
              {index: 2, status: 'skipped', lead_id: existing.body.lead.id},
            ],
            error: [
              {index: 1, status: 'failed', error: {message: 'matches the lead row 0 would create by email', param: 'contact_email'}},
              {index: 2, status: 'failed', error: {message: `matches existing lead ${existing.body.lead.id} by email`, param: 'contact_email'}},
            ],
          }
          for (const [onDuplicate, rows] of Object.entries(expected)) {
            const response = await bulk({dry_run: true, on_duplicate: onDuplicate, leads})
            expect(response.body.results, onDuplicate).to.deep.equal([{index: 0, status: 'created'}, ...rows])
          }
          expect(await counts(daemon, tenant)).to.deep.equal(before)
        })

        it('fails alone a row with a control character, in a dry run too, where a single create answers 400', async function () {
          await daemon.services.customers.addField(tenant.customer.id, {slug: 'note', type: 'string'})
          const leads = [
            {contact_name: 'Before'},
            {contact_name: 'Bell\u0007'},
            {contact_name: 'Noted', custom_fields: {note: 'nul\u0000'}},
            {contact_name: 'After', custom_fields: {note: 'tab\tand line\nbreaks', renamed: 'bell\u0007'}},
          ]
          for (const dryRun of [true, false]) {
            const response = await bulk({dry_run: dryRun, leads})
            expect(response.status, response.text).to.equal(200)
            expect(response.body.summary).to.deep.equal({received: 4, created: 2, updated: 0, skipped: 0, failed: 2})
            const control = 'contains a control character (only tab and line breaks are allowed)'
            expect(response.body.results[1]).to.deep.equal({
              index: 1,
              status: 'failed',
              error: {message: `field "contact_name" ${control}`, param: 'contact_name'},
            })
            expect(response.body.results[2]).to.deep.equal({
              index: 2,
              status: 'failed',
              error: {message: `field "custom_fields.note" ${control}`, param: 'custom_fields.note'},
            })
            expect(response.body.results[3].status).to.equal('created')
            expect((await counts(daemon, tenant)).leads).to.equal(dryRun ? 0 : 2)
          }
          const single = await postJson(daemon, tenant, CREATE, leads[1])
          expect(single.status).to.equal(400)
          expect(single.body.error).to.include({type: 'invalid_request_error', param: 'contact_name'})
          expect((await counts(daemon, tenant)).leads).to.equal(2)
        })

        it('accepts 500 rows in one request', async function () {
          const leads = Array.from({length: 500}, (_, i) => ({contact_name: `Row ${i}`, contact_email: `row${i}@example.org`}))
          const response = await bulk({leads})
          expect(response.status).to.equal(200)
          expect(response.body.summary).to.deep.equal({received: 500, created: 500, updated: 0, skipped: 0, failed: 0})
          const again = await bulk({leads})
          expect(again.body.summary).to.deep.equal({received: 500, created: 0, updated: 500, skipped: 0, failed: 0})
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 500, events: 0})
        })

        for (const [label, body, param] of [
          ['501 rows', {leads: Array.from({length: 501}, () => ({contact_name: 'x'}))}, 'leads'],
          ['no rows', {leads: []}, 'leads'],
          ['leads that is not an array', {leads: {contact_name: 'x'}}, 'leads'],
          ['no leads field', {dry_run: true}, 'leads'],
          ['an unknown option', {leads: [{contact_name: 'x'}], upsert: true}, 'upsert'],
          ['a bad on_duplicate', {leads: [{contact_name: 'x'}], on_duplicate: 'merge'}, 'on_duplicate'],
          ['a non-boolean dry_run', {leads: [{contact_name: 'x'}], dry_run: 'yes'}, 'dry_run'],
        ] as const) {
          it(`rejects ${label} with 400 naming ${param}, writing nothing`, async function () {
            const response = await bulk(body)
            expect(response.status).to.equal(400)
            expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param})
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 0, events: 0})
          })
        }

        it('rejects a body that is an array with 400', async function () {
          const response = await bulk([{contact_name: 'x'}])
          expect(response.status).to.equal(400)
          expect(response.body.error.type).to.equal('invalid_request_error')
        })

        it('takes bodies over 1 MiB but refuses those over 10 MiB with 413', async function () {
          const padded = (size: number) => ({leads: [{contact_name: 'Big', custom_fields: {budget: 1, note: 'x'.repeat(size)}}]})
          expect((await bulk(padded(2 * 1024 * 1024))).status).to.equal(200)
          const huge = await bulk(padded(10 * 1024 * 1024 + 1))
          expect(huge.status).to.equal(413)
          expect(huge.body.error).to.deep.equal({
            type: 'invalid_request_error',
            code: 413,
            message: 'Request body is too large: a bulk request takes at most 10 MiB (after decompression); send the rows in more requests.',
          })
        })

        it('writes 500 leads of quote-heavy custom fields in a body just under 10 MiB, planned after its reads and before', async function () {
          this.timeout(60_000)
          const slugs = ['q1', 'q2', 'q3', 'q4', 'q5']
          for (const slug of slugs) await daemon.services.customers.addField(tenant.customer.id, {slug, type: 'string'})
          // JSON writes each quote and backslash as two bytes, and MySQL's escaping doubles those again:
          // the values below take twice the body's size in SQL, past MariaDB's default 16 MiB packet.
          const value = '"\\'.repeat(1000)
          const customFields = Object.fromEntries(slugs.map((slug) => [slug, value]))
          expect(Buffer.byteLength(JSON.stringify(customFields))).to.be.within(20_000, 32_768)
          const bodyOf = (name: string) =>
            JSON.stringify({leads: Array.from({length: 500}, (_, i) => ({contact_name: `${name} ${i} ${'"'.repeat(180)}`, custom_fields: customFields}))})
          const created = {received: 500, created: 500, updated: 0, skipped: 0, failed: 0}

          const first = bodyOf('Quoted')
          expect(Buffer.byteLength(first)).to.be.within(9.7 * 1024 * 1024, 10 * 1024 * 1024)
          const response = await bulk(first, 'quote-heavy')
          expect(response.status).to.equal(200)
          expect(response.body.summary).to.deep.equal(created)
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 500, events: 0})
          const list = await daemon.request('/api/agents/crm/leads?include_custom_fields=true&search=quoted%20499', {
            token: tenant.token,
            customerId: tenant.customer.id,
          })
          expect(list.body.leads).to.have.length(1)
          expect(list.body.leads[0].custom_fields).to.deep.equal(customFields)
          const replay = await bulk(first, 'quote-heavy')
          expect(replay.headers.get('idempotent-replayed')).to.equal('true')
          expect(replay.body).to.deep.equal(response.body)

          // The customer's setup is kept now: the next bulk is planned with it (on the guess, when it is on).
          const before = guesses()
          const second = await bulk(bodyOf('Requoted'))
          expect(second.status).to.equal(200)
          expect(guesses()).to.deep.equal(guessed(before, 'used'))
          expect(second.body.summary).to.deep.equal(created)
          expect(await counts(daemon, tenant)).to.deep.equal({leads: 1000, events: 0})
        })

        it('answers a non-JSON body with 415', async function () {
          const response = await daemon.request(BULK, {
            method: 'POST',
            token: tenant.token,
            customerId: tenant.customer.id,
            headers: {'content-type': 'text/csv'},
            body: 'contact_name\nAda',
          })
          expect(response.status).to.equal(415)
        })

        /**
         * A tenant's first bulk request keeps its setup (SetupCache); with the bulk guess on, the
         * ones after it are planned while their reads are out, on the guess that every row is a new
         * person and the setup is unchanged (bulk-guess.ts). Either way the answers are the same.
         */
        describe('after the customer’s first bulk request', function () {
          const leadsNamed = async (search: string) =>
            (
              await daemon.request(`/api/agents/crm/leads?include_custom_fields=true&search=${encodeURIComponent(search)}`, {
                token: tenant.token,
                customerId: tenant.customer.id,
              })
            ).body.leads

          it('writes every row when all are new', async function () {
            await bulk({leads: [{contact_name: 'Keeps the setup'}]})
            const before = guesses()
            const response = await bulk(
              {
                leads: [
                  {contact_name: 'Second One', contact_email: 'second-1@example.org'},
                  {contact_name: 'Second Two', contact_phone: '+1 555 010 7100', custom_fields: {budget: 7}},
                ],
              },
              'second-bulk',
            )
            expect(response.status).to.equal(200)
            expect(response.body.summary).to.deep.equal({received: 2, created: 2, updated: 0, skipped: 0, failed: 0})
            expect(guesses()).to.deep.equal(guessed(before, 'used'))
            const found = await leadsNamed('second')
            expect(found.map((lead: {id: string}) => lead.id).sort()).to.deep.equal(response.body.results.map((row: {lead_id: string}) => row.lead_id).sort())
            expect(found.find((lead: {contact_name: string}) => lead.contact_name === 'Second Two').custom_fields).to.deep.equal({budget: 7})
            const replay = await bulk(
              {
                leads: [
                  {contact_name: 'Second One', contact_email: 'second-1@example.org'},
                  {contact_name: 'Second Two', contact_phone: '+1 555 010 7100', custom_fields: {budget: 7}},
                ],
              },
              'second-bulk',
            )
            expect(replay.body).to.deep.equal(response.body)
            expect(await counts(daemon, tenant)).to.deep.equal({leads: 3, events: 0})
          })

          it('merges a row that matches a stored lead', async function () {
            await bulk({leads: [{contact_name: 'Keeps the setup'}]})
            const known = await postJson(daemon, tenant, CREATE, {contact_name: 'Known', contact_email: 'known@example.org'})
            const before = guesses()
            const response = await bulk({leads: [{contact_email: 'fresh@example.org'}, {contact_email: 'KNOWN@example.org', contact_phone: '555 010 7001'}]})
            expect(response.body.results.map((row: {status: string}) => row.status)).to.deep.equal(['created', 'updated'])
            expect(response.body.results[1].lead_id).to.equal(known.body.lead.id)
            expect(guesses()).to.deep.equal(guessed(before, 'dropped'))
            expect((await counts(daemon, tenant)).leads).to.equal(3)
            const [merged] = await leadsNamed('known@example.org')
            expect(merged).to.include({id: known.body.lead.id, contact_name: 'Known', contact_phone: '555 010 7001'})
          })

          it('plans the next bulk of a customer whose latest bulk matched stored leads after its reads, until one matches none', async function () {
            await bulk({leads: [{contact_email: 'again@example.org'}]})
            await bulk({leads: [{contact_email: 'again@example.org', contact_name: 'Again'}]})
            const before = guesses()
            const resent = await bulk({leads: [{contact_email: 'again@example.org', contact_name: 'Again, twice'}]})
            expect(resent.body.results.map((row: {status: string}) => row.status)).to.deep.equal(['updated'])
            expect(guesses()).to.deep.equal(before)
            await bulk({leads: [{contact_email: 'someone-new@example.org'}]})
            expect(guesses()).to.deep.equal(before)
            const fresh = await bulk({leads: [{contact_email: 'someone-newer@example.org'}]})
            expect(fresh.body.results.map((row: {status: string}) => row.status)).to.deep.equal(['created'])
            expect(guesses()).to.deep.equal(guessed(before, 'used'))
          })

          it('uses a stage and a field another process added since the setup was kept', async function () {
            await bulk({leads: [{contact_name: 'Keeps the setup'}]})
            const operator = await openServices(backend)
            try {
              await operator.customers.addStage(tenant.customer.id, {slug: 'vip', name: 'VIP'})
              await operator.customers.addField(tenant.customer.id, {slug: 'shoe_size', type: 'number'})
            } finally {
              await operator.close()
            }
            const before = guesses()
            const response = await bulk({leads: [{contact_name: 'Staged Shopper', stage_slug: 'vip', custom_fields: {shoe_size: 44}}]})
            expect(response.body.results.map((row: {status: string}) => row.status)).to.deep.equal(['created'])
            expect(guesses()).to.deep.equal(guessed(before, 'dropped'))
            expect(response.body.unknown_custom_fields).to.deep.equal([])
            const [staged] = await leadsNamed('staged shopper')
            expect(staged.current_stage.slug).to.equal('vip')
            expect(staged.custom_fields).to.deep.equal({shoe_size: 44})
          })
        })

        it('ends a bulk row and simultaneous single creates of one person as one lead', async function () {
          const responses = await Promise.all([
            bulk({leads: [{contact_email: 'mixed@example.org', contact_name: 'Bulk'}]}),
            ...Array.from({length: 5}, () => postJson(daemon, tenant, CREATE, {contact_email: 'mixed@example.org'})),
          ])
          expect(responses.every((r) => r.status === 200 || r.status === 201)).to.equal(true)
          const {leads} = await counts(daemon, tenant)
          expect(leads).to.equal(1)
        })
      })
    }
  })
})
