import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import type {LeadRecord} from '../../src/leads/lead-types.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LIST = '/api/agents/crm/leads'
const BASE = Date.UTC(2026, 0, 1)
const LEAD_FIELDS = [
  'id',
  'customer_id',
  'source_platform',
  'source_type',
  'status',
  'created_at',
  'updated_at',
  'contact_name',
  'contact_phone',
  'contact_email',
  'score',
  'qualified',
  'current_stage',
  'owner',
  'last_interaction_at',
  'interaction_count',
]

type SortBy = 'created_at' | 'updated_at' | 'last_interaction_at'

/** The order the API must return: by the sort column (nulls last), ties by id, both in the given direction. */
function expectedOrder(leads: LeadRecord[], sortBy: SortBy, dir: 'asc' | 'desc'): string[] {
  const value = (lead: LeadRecord) => ({created_at: lead.createdAt, updated_at: lead.updatedAt, last_interaction_at: lead.lastInteractionAt})[sortBy]
  const sign = dir === 'asc' ? 1 : -1
  return [...leads]
    .sort((a, b) => {
      const va = value(a)
      const vb = value(b)
      if (va === null || vb === null) {
        if (va !== vb) return va === null ? 1 : -1
      } else if (va !== vb) {
        return sign * (va - vb)
      }
      return sign * (a.id < b.id ? -1 : 1)
    })
    .map((lead) => lead.id)
}

describe('GET /api/agents/crm/leads', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let a: TestTenant
    let b: TestTenant
    let leadsA: LeadRecord[]
    const get = (tenant: TestTenant, query = '') => daemon.request(`${LIST}${query}`, {token: tenant.token, customerId: tenant.customer.id})

    before(async function () {
      daemon = await startTestDaemon(backend)
      a = await newTenant(daemon.services, undefined, {roomy: true})
      b = await newTenant(daemon.services, undefined, {roomy: true})
      const ownerId = randomUUID()
      await daemon.db('owners').insert({id: ownerId, customer_id: a.customer.id, name: 'Olive Owner', role_name: 'Agent', created_at: BASE})
      // 25 leads; updated_at repeats in groups of three so ties must be broken by id.
      leadsA = Array.from({length: 25}, (_, i) =>
        leadRecord(a, {
          createdAt: BASE + i * 1000,
          updatedAt: BASE + 100_000 + Math.floor(i / 3) * 1000,
          lastInteractionAt: i % 4 === 0 ? null : BASE + 200_000 + (i % 5) * 1000,
          contactName: `Lead ${String(i).padStart(2, '0')}`,
          contactEmail: `lead${i}@example.com`,
          status: i % 5 === 0 ? 'won' : 'active',
          stageId: a.stages[i % 2]!.id,
          leadLine: i % 3 === 0 ? 'buyer' : i % 3 === 1 ? 'seller' : null,
          customFields: {lead_line: i % 3 === 0 ? 'buyer' : i % 3 === 1 ? 'seller' : null, budget: i * 1000},
          ownerId: i === 7 ? ownerId : null,
        }),
      )
      leadsA[3] = {...leadsA[3]!, contactName: 'Ada Lovelace', contactPhone: '+1 (555) 010-2000', contactEmail: 'Ada@Example.org'}
      leadsA[4] = {...leadsA[4]!, contactName: '100% Real', contactPhone: '555.777.1234'}
      await insertLeads(daemon.db, leadsA)
      await insertLeads(daemon.db, [
        leadRecord(b, {contactName: 'Ada Lovelace', contactEmail: 'ada@example.org', contactPhone: '5550102000', createdAt: BASE, updatedAt: BASE}),
      ])
    })
    after(async function () {
      await daemon.stop()
    })

    it('returns the first page with the spec defaults and exactly the Lead fields', async function () {
      const response = await get(a)
      expect(response.status).to.equal(200)
      expect(response.body).to.have.keys(['leads', 'total', 'limit', 'offset', 'next_cursor'])
      expect(response.body).to.include({total: 25, limit: 20, offset: 0})
      expect(response.body.next_cursor).to.be.a('string')
      expect(response.body.leads.map((lead: {id: string}) => lead.id)).to.deep.equal(expectedOrder(leadsA, 'updated_at', 'asc').slice(0, 20))
      const first = response.body.leads[0]
      expect(first).to.have.keys(LEAD_FIELDS)
      expect(first.customer_id).to.equal(a.customer.id)
      expect(first.current_stage).to.have.keys(['id', 'slug', 'name', 'color'])
      expect(first.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      const stored = leadsA.find((lead) => lead.id === first.id)!
      expect(first).to.include({score: null, qualified: null, owner: null, interaction_count: 0, status: stored.status})
      expect(first).to.include({contact_name: stored.contactName, contact_email: stored.contactEmail, source_platform: 'direct', source_type: 'manual'})
    })

    it('renders the owner and custom fields when asked', async function () {
      const response = await get(a, '?include_custom_fields=true&limit=100')
      const lead7 = response.body.leads.find((lead: {id: string}) => lead.id === leadsA[7]!.id)
      expect(lead7.owner).to.deep.include({name: 'Olive Owner', role_name: 'Agent'})
      expect(lead7.custom_fields).to.deep.equal({lead_line: 'seller', budget: 7000})
      expect(lead7.last_interaction_at).to.equal(new Date(BASE + 202_000).toISOString())
    })

    for (const sortBy of ['created_at', 'updated_at', 'last_interaction_at'] as const) {
      for (const dir of ['asc', 'desc'] as const) {
        it(`walks every lead once by cursor with sort_by=${sortBy}&sort_dir=${dir}`, async function () {
          const seen: string[] = []
          let cursor: string | null = null
          let pages = 0
          do {
            const query: string = `?sort_by=${sortBy}&sort_dir=${dir}&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
            const response = await get(a, query)
            expect(response.status, response.text).to.equal(200)
            expect(response.body.total).to.equal(25)
            seen.push(...response.body.leads.map((lead: {id: string}) => lead.id))
            cursor = response.body.next_cursor
            pages += 1
          } while (cursor !== null && pages < 10)
          expect(pages).to.equal(4)
          expect(seen).to.deep.equal(expectedOrder(leadsA, sortBy, dir))
        })
      }
    }

    it('pages by offset and reports it', async function () {
      const response = await get(a, '?offset=20&limit=20')
      expect(response.body).to.include({total: 25, offset: 20, limit: 20, next_cursor: null})
      expect(response.body.leads.map((lead: {id: string}) => lead.id)).to.deep.equal(expectedOrder(leadsA, 'updated_at', 'asc').slice(20))
      // Across the leads with and without a last interaction (read as two ranges, nulls last).
      for (const dir of ['asc', 'desc'] as const) {
        const mixed = await get(a, `?sort_by=last_interaction_at&sort_dir=${dir}&offset=15&limit=5`)
        expect(
          mixed.body.leads.map((lead: {id: string}) => lead.id),
          dir,
        ).to.deep.equal(expectedOrder(leadsA, 'last_interaction_at', dir).slice(15, 20))
      }
    })

    it('serves any offset of 0 or more (the spec sets no maximum), past the end with no leads and the total intact', async function () {
      for (const offset of [10_001, 1_000_000, Number.MAX_SAFE_INTEGER]) {
        const deep = await get(a, `?offset=${offset}&limit=100`)
        expect(deep.status, String(offset)).to.equal(200)
        expect(deep.body).to.include({total: 25, offset, next_cursor: null})
        expect(deep.body.leads).to.deep.equal([])
      }
      // Past what a JSON number holds exactly, the offset answered could not be the one asked for.
      const unrepresentable = await get(a, `?offset=${Number.MAX_SAFE_INTEGER + 1}`)
      expect(unrepresentable.status).to.equal(400)
      expect(unrepresentable.body.error).to.include({type: 'invalid_request_error', param: 'offset'})
      expect(unrepresentable.body.error.message).to.include('cursor')
    })

    it('rejects a cursor replayed under another sort with 400 naming the cursor', async function () {
      const first = await get(a, '?sort_by=created_at&limit=5')
      const replay = await get(a, `?sort_by=updated_at&cursor=${encodeURIComponent(first.body.next_cursor)}`)
      expect(replay.status).to.equal(400)
      expect(replay.body).to.deep.equal({
        error: {
          type: 'invalid_request_error',
          code: 400,
          message:
            'cursor was issued for sort_by=created_at&sort_dir=asc; repeat those with it, or drop the cursor to start over with sort_by=updated_at&sort_dir=asc',
          param: 'cursor',
        },
      })
      const otherDir = await get(a, `?sort_by=created_at&sort_dir=desc&cursor=${encodeURIComponent(first.body.next_cursor)}`)
      expect(otherDir.status).to.equal(400)
    })

    for (const cursor of ['garbage', 'eyJzIjoidXBkYXRlZF9hdCJ9.AAAA', 'a.b.c', '%00', 'eyJ9.' + 'A'.repeat(22)]) {
      it(`answers the bad cursor ${JSON.stringify(cursor)} with 400, never 500`, async function () {
        const response = await get(a, `?cursor=${encodeURIComponent(cursor)}`)
        expect(response.status).to.equal(400)
        expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param: 'cursor'})
      })
    }

    it('filters by status, stage, lead line and times, with total counting the filter', async function () {
      const won = await get(a, '?status=won&limit=100')
      expect(won.body.total).to.equal(5)
      expect(won.body.leads.every((lead: {status: string}) => lead.status === 'won')).to.equal(true)

      const stage = await get(a, `?stageId=${a.stages[1]!.id}&limit=100`)
      expect(stage.body.total).to.equal(12)
      expect(stage.body.leads.every((lead: {current_stage: {id: string}}) => lead.current_stage.id === a.stages[1]!.id)).to.equal(true)

      const buyers = await get(a, '?lead_line=buyer&limit=100')
      expect(buyers.body.total).to.equal(9)

      const created = await get(a, `?created_since=${new Date(BASE + 20_000).toISOString()}`)
      expect(created.body.total).to.equal(5)
      const updated = await get(a, `?updated_since=${encodeURIComponent(new Date(BASE + 107_000).toISOString())}`)
      expect(updated.body.total).to.equal(4)
    })

    it('counts created_since and updated_since with digits past the millisecond as "at or after" them', async function () {
      // Lead 20 was created at BASE + 20 s and leads 21 to 23 updated at BASE + 107 s, exactly: a bound 0.1 µs later leaves them out.
      const created = await get(a, `?created_since=${new Date(BASE + 20_000).toISOString().replace('Z', '0001Z')}&limit=100`)
      expect(created.status, created.text).to.equal(200)
      expect(created.body.total).to.equal(4)
      expect(created.body.leads.map((lead: {id: string}) => lead.id)).to.not.include(leadsA[20]!.id)
      const updated = await get(a, `?updated_since=${new Date(BASE + 107_000).toISOString().replace('Z', '000001Z')}&limit=100`)
      expect(updated.body.total).to.equal(1)
      expect(updated.body.leads.map((lead: {id: string}) => lead.id)).to.deep.equal([leadsA[24]!.id])
    })

    it('says to encode the + of an offset when a query string turned it into a space', async function () {
      for (const param of ['updated_since', 'created_since']) {
        const response = await get(a, `?${param}=2026-01-01T00:00:00+02:00`)
        expect(response.status).to.equal(400)
        expect(response.body.error).to.deep.equal({
          type: 'invalid_request_error',
          code: 400,
          message: `query parameter "${param}" has a space where its offset's + should be: a query string reads + as a space, so send it as %2B (2026-01-01T00:00:00%2B02:00)`,
          param,
        })
      }
      const encoded = await get(a, `?updated_since=${encodeURIComponent('2026-01-01T02:01:47+02:00')}`)
      expect(encoded.status).to.equal(200)
      expect(encoded.body.total).to.equal(4)
    })

    it('searches name and email case-insensitively and phone ignoring formatting', async function () {
      const ada = leadsA[3]!.id
      for (const term of ['ada love', 'LOVELACE', 'ada@example', '5550102000', '(555) 010-2000', '555-010']) {
        const response = await get(a, `?search=${encodeURIComponent(term)}`)
        expect(
          response.body.leads.map((lead: {id: string}) => lead.id),
          term,
        ).to.deep.equal([ada])
        expect(response.body.total).to.equal(1)
      }
      expect((await get(a, '?search=5557771234')).body.leads[0].id).to.equal(leadsA[4]!.id)
    })

    it('refuses a query parameter whose percent-encoding is not UTF-8 instead of reading U+FFFD', async function () {
      // A client that encodes Latin-1 (é as %E9) would otherwise search for "\uFFFDmile" and
      // silently find nothing; a body with such bytes is a 400 too.
      for (const [query, param] of [
        ['?search=%E9mile', 'search'],
        ['?search=gr%E2%82ace', 'search'],
        ['?status=%E9', 'status'],
        ['?s%E9arch=x', 's\uFFFDarch'],
      ] as const) {
        const response = await get(a, query)
        expect(response.status, query).to.equal(400)
        expect(response.body.error, query).to.deep.equal({
          type: 'invalid_request_error',
          code: 400,
          message: `query parameter "${param}" is not UTF-8: percent-encode its text as UTF-8 (é is %C3%A9)`,
          param,
        })
      }
      // UTF-8, an encoded U+FFFD and a lone % that starts no escape are read as before.
      expect((await get(a, '?search=%C3%A9mile')).status).to.equal(200)
      expect((await get(a, '?search=%EF%BF%BD')).status).to.equal(200)
      expect((await get(a, '?search=100%')).body.total).to.equal(1)
    })

    it('treats LIKE wildcards in a search as plain characters', async function () {
      const percent = await get(a, `?search=${encodeURIComponent('100%')}`)
      expect(percent.body.total).to.equal(1)
      const underscore = await get(a, `?search=${encodeURIComponent('_')}`)
      expect(underscore.body.total).to.equal(0)
    })

    it("never shows another customer's leads, whatever the parameters", async function () {
      const own = await get(b, '?limit=100')
      expect(own.body.total).to.equal(1)
      expect(own.body.leads[0].customer_id).to.equal(b.customer.id)
      expect((await get(b, '?search=lead1')).body.total).to.equal(0)
      expect((await get(b, `?stageId=${a.stages[0]!.id}`)).body.total).to.equal(0)
      const cursorFromA = (await get(a, '?limit=1')).body.next_cursor
      const withForeignCursor = await get(b, `?cursor=${encodeURIComponent(cursorFromA)}&limit=100`)
      expect(withForeignCursor.status).to.equal(400)
      expect(withForeignCursor.body.error).to.include({type: 'invalid_request_error', param: 'cursor'})
    })

    for (const [query, param] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?offset=-1', 'offset'],
      ['?status=open', 'status'],
      ['?stageId=123', 'stageId'],
      ['?sort_by=name', 'sort_by'],
      ['?sort_dir=sideways', 'sort_dir'],
      ['?lead_line=renter', 'lead_line'],
      ['?include_custom_fields=1', 'include_custom_fields'],
      ['?created_since=now', 'created_since'],
      ['?updated_since=2026-02-30T00:00:00Z', 'updated_since'],
      ['?search=', 'search'],
      ['?limit=5&limit=6', 'limit'],
      ['?colour=red', 'colour'],
    ] as const) {
      it(`answers ${query} with 400 naming ${param}`, async function () {
        const response = await get(a, query)
        expect(response.status).to.equal(400)
        expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param})
        expect(response.body.error.message).to.include(param)
      })
    }
  })
})
