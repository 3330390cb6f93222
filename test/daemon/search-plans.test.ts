import {expect} from 'chai'

import {CustomersStore} from '../../src/customers/customers-store.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'
import type {SortDirection, SortField} from '../../src/leads/cursor.js'
import {LeadCountsStore} from '../../src/leads/lead-counts-store.js'
import {type LeadFilters, type LeadPageRequest, LeadQueryStore, type ListTuning} from '../../src/leads/lead-query-store.js'
import {leadWords, parseSearch} from '../../src/leads/lead-search-terms.js'
import type {LeadRecord} from '../../src/leads/lead-types.js'

const LEADS = '/api/agents/crm/leads'
const FIRST_NAMES = ['Grace', 'Grant', 'Ada', 'Linus']
const SURNAMES = ['Kalo', 'Kamira', 'Dubois', 'Loret', 'Zed']
const STATUSES = ['active', 'won', 'lost'] as const
const LINES = ['buyer', 'seller', null] as const
const BASE = Date.parse('2026-01-01T00:00:00Z')

/** Lead i: names, statuses and lines in cycles of different lengths; `Zed` surnames only among the oldest; ties on updated_at. */
function person(tenant: TestTenant, i: number): LeadRecord {
  const surname = i < 60 && i % 2 === 0 ? 'Zed' : SURNAMES[i % 4]!
  return leadRecord(tenant, {
    contactName: `${FIRST_NAMES[i % 4]} ${surname}${i % 3 === 0 ? '' : ` ${SURNAMES[(i * 7) % 4]}`}`,
    contactEmail: i % 5 === 0 ? `${surname.toLowerCase()}.${i}@example.org` : null,
    status: STATUSES[i % 3]!,
    leadLine: LINES[i % 3]!,
    customFields: {lead_line: LINES[i % 3]!},
    createdAt: BASE + i * 1000,
    updatedAt: BASE + Math.floor(i / 3) * 1000,
    lastInteractionAt: i % 4 === 1 ? null : BASE + ((i * 37) % 240) * 500,
  })
}

/** What a search must return, computed naively: every piece begins a word of the lead, the filters hold, in the page's order. */
function expected(leads: LeadRecord[], term: string, filters: Omit<LeadFilters, 'search'>, sortBy: SortField, sortDir: SortDirection): string[] {
  const plan = parseSearch(term)
  if (plan?.kind !== 'words') throw new Error('word terms only')
  const column = {created_at: 'createdAt', updated_at: 'updatedAt', last_interaction_at: 'lastInteractionAt'} as const
  const sign = sortDir === 'asc' ? 1 : -1
  return leads
    .filter((lead) => plan.pieces.every((piece) => leadWords(lead).some((word) => word.startsWith(piece))))
    .filter(
      (lead) => (filters.status === undefined || lead.status === filters.status) && (filters.leadLine === undefined || lead.leadLine === filters.leadLine),
    )
    .sort((a, b) => {
      const [x, y] = [a[column[sortBy]], b[column[sortBy]]]
      // Nulls last in both directions, then the value, then the id, in the page's direction.
      if ((x === null) !== (y === null)) return x === null ? 1 : -1
      if (x !== y) return sign * ((x as number) - (y as number))
      return sign * (a.id < b.id ? -1 : 1)
    })
    .map((lead) => lead.id)
}

/**
 * Multi-word and word-plus-filter searches give the leads a naive filter gives, in order, and a
 * cursor pages through them without duplicates or gaps, whichever way each page is found: by a
 * window of the sort order (walk), from the matches (drive), or a walk that falls back to a drive
 * when its window does not hold the page (the `Zed` leads are all among the oldest).
 */
describe('search plans', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const leads: LeadRecord[] = []

    before(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services)
      leads.push(...Array.from({length: 240}, (_, i) => person(tenant, i)))
      await insertLeads(daemon.db, leads)
    })
    after(async function () {
      await daemon.stop()
    })

    const ways: Array<[name: string, tuning: ListTuning, used: string[]]> = [
      // The last page of each search is driven: a window short of a whole page cannot tell the end from matches beyond it.
      ['walking a window that holds every lead', {walkWindow: 1_000_000, driveAtMost: 0}, ['drive', 'walk']],
      ['walking a small window, else driving', {walkWindow: 24, driveAtMost: 0}, ['drive', 'walk']],
      ['driving from the matches', {driveAtMost: Number.MAX_SAFE_INTEGER}, ['drive']],
    ]
    const searches: Array<[term: string, filters: Omit<LeadFilters, 'search'>, sortBy: SortField, sortDir: SortDirection]> = [
      ['gra ka', {}, 'updated_at', 'asc'],
      ['ka gra', {}, 'updated_at', 'desc'],
      ['grace', {status: 'won'}, 'updated_at', 'asc'],
      ['gra', {status: 'won', leadLine: 'buyer'}, 'updated_at', 'desc'],
      ['ada', {leadLine: 'seller'}, 'created_at', 'desc'],
      ['zed', {}, 'updated_at', 'desc'],
      ['zed gra', {status: 'active'}, 'created_at', 'desc'],
      ['gra kalo', {}, 'last_interaction_at', 'asc'],
      ['linus', {status: 'lost'}, 'last_interaction_at', 'desc'],
      ['dub lo', {}, 'updated_at', 'asc'],
      ['nobody here', {}, 'updated_at', 'asc'],
    ]
    for (const [way, tuning, used] of ways) {
      it(`pages multi-word and filtered searches as a naive filter orders them, ${way}`, async function () {
        const customers = new CustomersStore(daemon.db)
        const store = new LeadQueryStore(daemon.db, new LeadCountsStore(daemon.db, customers), customers, tuning)
        const taken = new Set<string>()
        const pageQuery = store.pageQuery.bind(store)
        store.pageQuery = (customerId, filters, page, found) => {
          taken.add(found)
          return pageQuery(customerId, filters, page, found)
        }
        for (const [term, filters, sortBy, sortDir] of searches) {
          const want = expected(leads, term, filters, sortBy, sortDir)
          const search = await store.searchPlan(tenant.customer.id, term)
          const seen: string[] = []
          let page: LeadPageRequest = {sortBy, sortDir, offset: 0, limit: 4}
          for (let pages = 0; pages < 100; pages++) {
            const rows = await store.listPage(tenant.customer.id, {...filters, search}, page)
            seen.push(...rows.slice(0, page.limit).map((lead) => lead.id))
            if (rows.length <= page.limit) break
            const last = rows[page.limit - 1]!
            const value = {created_at: last.createdAt, updated_at: last.updatedAt, last_interaction_at: last.lastInteractionAt}[sortBy]
            page = {...page, after: {sortBy, sortDir, value, id: last.id}}
          }
          const label = `${term} ${JSON.stringify(filters)} ${sortBy} ${sortDir}`
          expect(seen, label).to.deep.equal(want)
          expect(await store.count(tenant.customer.id, {...filters, search}), label).to.equal(want.length)
          const offset = await store.listPage(tenant.customer.id, {...filters, search}, {sortBy, sortDir, offset: 3, limit: 2})
          expect(
            offset.map((lead) => lead.id),
            `${label} offset 3`,
          ).to.deep.equal(want.slice(3, 6))
        }
        expect([...taken].sort()).to.deep.equal(used)
        expect(expected(leads, 'zed', {}, 'updated_at', 'desc')).to.have.length(30)
      })
    }

    it('answers a search or a deep offset page past its statement time limit with a 400 that says how to narrow it, and keeps serving', async function () {
      const limited = await startTestDaemon(backend, {}, {LEADS_STATEMENT_TIMEOUT_MS: '1'})
      try {
        const crowd = await newTenant(limited.services, undefined, {roomy: true})
        // Enough leads that counting one common word takes several milliseconds on either backend, on a fast machine too.
        await insertLeads(
          limited.db,
          Array.from({length: 20_000}, (_, i) => leadRecord(crowd, {contactName: `Common Person ${i}`, updatedAt: BASE + i})),
        )
        const ask = (query: string) => limited.request(`${LEADS}?${query}`, {token: crowd.token, customerId: crowd.customer.id})
        // More than the MySQL pool's 16 connections: a statement stopped at its limit gives its connection back.
        for (let i = 0; i < 20; i++) {
          const response = await ask(`search=${encodeURIComponent('common person')}&sort_dir=desc&limit=${i + 1}`)
          expect(response.status, response.text).to.equal(400)
          expect(response.body.error.type).to.equal('invalid_request_error')
          expect(response.body.error.code).to.equal(400)
          expect(response.body.error.param).to.equal('search')
          expect(response.body.error.message).to.equal(
            'search matches too many leads to answer within 0.001 s: narrow it with a longer or rarer word (a surname, the beginning of an email) or add a filter (status, stageId, lead_line, created_since, updated_since)',
          )
        }
        // An offset page reads every lead before it: past the limit, the way on is a cursor. No
        // filter, so the total comes from the kept counts and only the page runs out of time. The
        // page takes several times the limit, yet a CI run once saw MariaDB finish it inside the
        // limit; a page that finishes must be the right one, and one of three asks must be stopped.
        let deep = await ask('offset=19000&limit=10')
        for (let tries = 1; deep.status === 200 && tries < 3; tries++) {
          expect(deep.body.leads, deep.text).to.have.length(10)
          deep = await ask('offset=19000&limit=10')
        }
        expect(deep.status, deep.text).to.equal(400)
        expect(deep.body.error).to.include({type: 'invalid_request_error', param: 'offset'})
        expect(deep.body.error.message).to.equal(
          "this page takes longer than 0.001 s to answer: an offset page reads every lead before it, so page this deep with cursor (each page's next_cursor costs the same at any depth)",
        )
        const created = await limited.request(LEADS, {
          method: 'POST',
          token: crowd.token,
          customerId: crowd.customer.id,
          headers: {'content-type': 'application/json', 'idempotency-key': 'after-the-limit'},
          body: JSON.stringify({contact_name: 'Rare Zebediah'}),
        })
        expect(created.status, created.text).to.equal(201)
      } finally {
        await limited.stop()
      }
    })
  })
})
