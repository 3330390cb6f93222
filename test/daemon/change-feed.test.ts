import {expect} from 'chai'

import {LeadsApiClient} from '../../src/client/api-client.js'
import {LeadWriter} from '../../src/client/lead-writer.js'
import {pullLeads} from '../../src/client/pull.js'
import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {holdNextCommit} from '../helpers/commit-hold.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'

interface PulledLead {
  id: string
  updated_at: string
  contact_name: string | null
}

/**
 * The change feed `leads pull` syncs on (GET /leads?sync=true): every committed create, merge
 * and bulk upsert is seen once by a resumed pull, in commit order; nothing is missed, and nothing
 * comes again when nothing changed.
 */
describe('the change feed', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    let client: LeadsApiClient

    /** Runs `leads pull`'s sync in-process against the state in memory; returns what it wrote. */
    const pull = async (state: {file: string}) => {
      const pulled: PulledLead[] = []
      await pullLeads(client, {
        baseUrl: daemon.url,
        customerId: tenant.customer.id,
        stateFile: state.file,
        pageSize: 100,
        includeCustomFields: false,
        follow: false,
        intervalMs: 0,
        writer: new LeadWriter('ndjson', async (text) => {
          for (const line of text.trim().split('\n').filter(Boolean)) pulled.push(JSON.parse(line) as PulledLead)
        }),
      })
      return pulled
    }
    const tableVersions = async () =>
      (
        (await daemon.db('leads').where({customer_id: tenant.customer.id}).select('id', 'updated_at')) as Array<{
          id: string
          updated_at: number | string
        }>
      )
        .map((row) => `${row.id}@${new Date(Number(row.updated_at)).toISOString()}`)
        .sort()
    const stateFile = () => ({file: `${process.env['TMPDIR'] ?? '/tmp'}/leads-feed-${tenant.customer.id}.json`})

    before(async function () {
      daemon = await startTestDaemon(backend)
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      client = new LeadsApiClient({baseUrl: daemon.url, token: tenant.token, customerId: tenant.customer.id})
    })
    after(async function () {
      await daemon.stop()
    })

    it('returns nothing on a second run after 1,200 bulk-created leads that share their updated_at', async function () {
      for (let batch = 0; batch < 3; batch++) {
        const leads = Array.from({length: 400}, (_, i) => ({contact_name: `Bulk ${batch}-${i}`, contact_email: `bulk-${batch}-${i}@example.org`}))
        expect((await postJson(daemon, tenant, BULK, {leads})).body.summary.created).to.equal(400)
      }
      const state = stateFile()
      const first = await pull(state)
      expect(first).to.have.length(1200)
      expect(new Set(first.map((lead) => lead.id)).size).to.equal(1200)
      expect(await pull(state)).to.deep.equal([])
    })

    /** The writes held open before their COMMIT (their time already stamped) by holdNextCommit. */
    const heldWrites = {
      create: () => daemon.services.leadsWrite.create(tenant.customer.id, {contact_name: 'Slow'}),
      merge: () => daemon.services.leadsWrite.create(tenant.customer.id, {contact_email: 'early@example.org', contact_name: 'Slow'}),
      bulk: () => daemon.services.leadsWrite.bulk(tenant.customer.id, {leads: [{contact_name: 'Slow'}, {contact_name: 'Slow too'}]}),
    }
    for (const [kind, startHeld] of Object.entries(heldWrites)) {
      it(`returns a ${kind} whose transaction committed after later leads were pulled`, async function () {
        const state = stateFile()
        await postJson(daemon, tenant, CREATE, {contact_name: 'Early', contact_email: 'early@example.org'})
        expect((await pull(state)).map((lead) => lead.contact_name)).to.deep.equal(['Early'])

        const {entered, release} = holdNextCommit(daemon.db)
        const slow = startHeld()
        await entered
        // SQLite has one writer at a time: there the others wait for the slow one, which is released after a second.
        const releaseLater = setTimeout(release, 1000)
        const others = Promise.all(['Fast 1', 'Fast 2'].map((name) => postJson(daemon, tenant, CREATE, {contact_name: name})))
        if (backend.name === 'mysql') {
          await others
          // The pull neither waits for the open write nor returns it, and Early keeps its old name.
          expect((await pull(state)).map((lead) => lead.contact_name).sort()).to.deep.equal(['Fast 1', 'Fast 2'])
        }
        release()
        clearTimeout(releaseLater)
        await Promise.all([slow, others])
        const rest = (await pull(state)).map((lead) => lead.contact_name)
        expect(rest).to.include('Slow')
        if (kind === 'bulk') expect(rest).to.include('Slow too')
        expect(await pull(state)).to.deep.equal([])
        // Once, in the end: every lead of the table with its final version.
        const everything = await pull({file: `${stateFile().file}.all`})
        expect(everything.map((lead) => `${lead.id}@${lead.updated_at}`).sort()).to.deep.equal(await tableVersions())
      })
    }

    it('gives a --follow pull every version exactly once while creates, merges and bulk run', async function () {
      const pulled: PulledLead[] = []
      const stop = new AbortController()
      const following = pullLeads(client, {
        baseUrl: daemon.url,
        customerId: tenant.customer.id,
        stateFile: null,
        pageSize: 50,
        includeCustomFields: false,
        follow: true,
        intervalMs: 20,
        signal: stop.signal,
        writer: new LeadWriter('ndjson', async (text) => {
          for (const line of text.trim().split('\n').filter(Boolean)) pulled.push(JSON.parse(line) as PulledLead)
        }),
      })
      const writers = Array.from({length: 4}, async (_, writer) => {
        for (let round = 0; round < 15; round++) {
          const person = (writer * 7 + round) % 20
          await postJson(daemon, tenant, CREATE, {contact_name: `W${writer} R${round}`, contact_email: `person${person}@example.org`})
          if (round % 5 === 0) {
            const leads = Array.from({length: 30}, (_, i) => ({
              contact_name: `Bulk ${writer}-${round}-${i}`,
              contact_phone: `555-01${String((writer * 30 + i) % 100).padStart(2, '0')}`,
            }))
            await postJson(daemon, tenant, BULK, {leads})
          }
        }
      })
      await Promise.all(writers)
      const finalVersions = await tableVersions()
      for (let i = 0; i < 400; i++) {
        const latest = new Map(pulled.map((lead) => [lead.id, `${lead.id}@${lead.updated_at}`]))
        if ([...latest.values()].sort().join() === finalVersions.join()) break
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      stop.abort()
      await following
      const versions = pulled.map((lead) => `${lead.id}@${lead.updated_at}`)
      expect(new Set(versions).size, 'no (id, updated_at) twice').to.equal(versions.length)
      const latest = new Map(pulled.map((lead) => [lead.id, `${lead.id}@${lead.updated_at}`]))
      expect([...latest.values()].sort()).to.deep.equal(finalVersions)
    })

    it('starts at an updated_since with digits past the millisecond after the leads of that millisecond', async function () {
      const created = await postJson(daemon, tenant, CREATE, {contact_name: 'Exactly then'})
      const updatedAt: string = created.body.lead.updated_at
      const feed = (since: string) => daemon.request(`${CREATE}?sync=true&updated_since=${since}`, {token: tenant.token, customerId: tenant.customer.id})
      expect((await feed(updatedAt)).body.leads.map((lead: PulledLead) => lead.contact_name)).to.deep.equal(['Exactly then'])
      const later = await feed(updatedAt.replace('Z', '5Z'))
      expect(later.status, later.text).to.equal(200)
      expect(later.body).to.include({total: 0})
      expect(later.body.leads).to.deep.equal([])
    })

    it('keeps the feed apart from the sorted list: its own parameters, its own cursors', async function () {
      const list = (query: string) => daemon.request(`${CREATE}?${query}`, {token: tenant.token, customerId: tenant.customer.id})
      await postJson(daemon, tenant, CREATE, {contact_name: 'One'})
      const feed = await list('sync=true')
      expect(feed.status).to.equal(200)
      expect(feed.body).to.include({total: 1, has_more: false, offset: 0})
      expect(feed.body.next_cursor).to.be.a('string')
      const sorted = await list('limit=1')
      expect(sorted.body).to.not.have.property('has_more')

      const withSort = await list('sync=true&sort_by=created_at')
      expect(withSort.status).to.equal(400)
      expect(withSort.body.error.param).to.equal('sort_by')
      expect((await list(`cursor=${feed.body.next_cursor}`)).body.error.message).to.include('issued for sync=true')
      expect((await list(`sync=true&cursor=${encodeURIComponent(feed.body.next_cursor)}&updated_since=2026-01-01T00:00:00Z`)).status).to.equal(400)
      const resumed = await list(`sync=true&cursor=${encodeURIComponent(feed.body.next_cursor)}`)
      expect(resumed.body.leads).to.deep.equal([])
      expect(resumed.body.next_cursor).to.equal(feed.body.next_cursor)
    })
  })
})
