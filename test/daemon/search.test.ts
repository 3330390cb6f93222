import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {CustomersStore} from '../../src/customers/customers-store.js'
import {LeadSearchIndex} from '../../src/leads/lead-search-index.js'
import {SEARCHES_AT_ONCE} from '../../src/leads/leads-service.js'
import {LeadQueryStore} from '../../src/leads/lead-query-store.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LEADS = '/api/agents/crm/leads'

/** The people every case searches among: name, email, phone. */
const PEOPLE = {
  grace: ['Grace Hopper', 'grace.hopper@navy.example', '+1 (555) 010-2000'],
  graceMarie: ['Grace-Marie Dubois', 'gm.dubois@example.org', '+33 1 23 45 67 89'],
  gracefully: ['Gracefully Late', null, null],
  jose: ['José Núñez', 'jose@example.org', '555.777.1234'],
  li: ['Li Wei', 'wei.li@example.cn', '(555) 010-3000'],
  obrien: ["Seán O'Brien", 'SEAN@OBRIEN.example', null],
  percent: ['100% Real', null, '5550104000'],
  nobody: [null, 'ada@example.org', null],
  dana: ['Dana Dobbs', 'dd@example.org', null],
  lukasz: ['Łukasz Weiß', null, null],
  odysseas: ['Οδυσσέας Παπαδόπουλος', null, null],
  // A soft hyphen (U+00AD) and a word joiner (U+2060), as a name pasted from a web page may hold.
  maximilian: ['Maxi\u00admilian Schwarz\u2060kopf', null, null],
} as const

/**
 * The documented search rules (docs/api.md, "Search"), the same cases on both backends: a word
 * matches the beginning of a name word or of the email, all words must match, phone digits
 * match the beginning of the whole number or of its last 10 digits, formatting ignored.
 */
describe('search', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant
    const ids = new Map<string, string>()
    const names = (ids_: string[]) => ids_.map((id) => [...ids].find(([, value]) => value === id)?.[0] ?? id).sort()

    const search = async (term: string, extra = '') => {
      const response = await daemon.request(`${LEADS}?limit=100&search=${encodeURIComponent(term)}${extra}`, {
        token: tenant.token,
        customerId: tenant.customer.id,
      })
      expect(response.status, JSON.stringify(response.body)).to.equal(200)
      const found = names(response.body.leads.map((lead: {id: string}) => lead.id))
      expect(response.body.total, `total for ${term}`).to.equal(found.length)
      return found
    }

    before(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
      for (const [key, [name, email, phone]] of Object.entries(PEOPLE)) {
        const response = await postJson(daemon, tenant, LEADS, {contact_name: name, contact_email: email, contact_phone: phone})
        expect(response.status, JSON.stringify(response.body)).to.equal(201)
        ids.set(key, response.body.lead.id)
      }
      // Another customer's Grace is never found.
      const other = await newTenant(daemon.services)
      await insertLeads(daemon.db, [leadRecord(other, {contactName: 'Grace Hopper', contactEmail: 'grace.hopper@navy.example'})])
    })
    after(async function () {
      await daemon.stop()
    })

    const cases: Array<[term: string, expected: Array<keyof typeof PEOPLE>, why: string]> = [
      ['Grace', ['grace', 'graceMarie', 'gracefully'], 'the beginning of a word, whole or not'],
      ['grace hop', ['grace'], 'every word must match'],
      ['hopper grace', ['grace'], 'in any order'],
      ['marie', ['graceMarie'], 'a hyphen separates words'],
      ['race', [], 'not the middle of a word'],
      ['opper', [], 'not the end of a word'],
      ['jose', ['jose'], 'accents are ignored'],
      ['NÚÑEZ', ['jose'], 'case and accents are ignored in the term too'],
      ['lukasz weiss', ['lukasz'], 'letters with no accent to drop are written plain: ł is l, ß is ss'],
      ['ŁUKASZ WEIẞ', ['lukasz'], 'and so in the term too'],
      ['ΟΔΥΣ', ['odysseas'], 'a capital Σ ending the term is σ, not the final ς it lower-cases to'],
      ['παπαδοπουλοσ', ['odysseas'], 'and a σ typed where a word ends finds its ς'],
      ['maximilian schwarzkopf', ['maximilian'], 'characters that show nothing within a word do not split it'],
      ['milian', [], 'so what follows them is the middle of the word'],
      ['li', ['li'], 'words of one or two letters count'],
      ["o'brien", ['obrien'], 'punctuation in a term splits it like in a name'],
      ['sean', ['obrien'], 'Seán is sean'],
      ['grace.hopper@navy.example', ['grace'], 'a whole email'],
      ['GRACE.HOP', ['grace'], 'the beginning of an email, any case'],
      ['sean@obrien', ['obrien'], 'an email stored in capitals'],
      ['ada@', ['nobody'], 'a lead with no name, by its email'],
      ['gm', ['graceMarie'], 'a word of the email before the @'],
      ['hopper', ['grace'], 'in the name and before the @'],
      ['navy', [], 'not the domain'],
      ['example.org', [], 'nor its words'],
      ['wei li', ['li'], 'words from the name and the email together'],
      ['ose', [], 'not the middle of an email word'],
      ['+1 (555) 010-2000', ['grace'], 'a phone number, formatting ignored'],
      ['15550102000', ['grace'], 'all its digits'],
      ['＋１ （５５５） ０１０-２０００', ['grace'], 'typed in full-width forms'],
      ['٥٥٥-٠١٠', ['grace', 'li', 'percent'], 'or in the digits of another script'],
      ['555-010', ['grace', 'li', 'percent'], 'the beginning of the last 10 digits'],
      ['1555', ['grace'], 'the beginning of all the digits'],
      ['+1 555 010 3000', ['li'], 'a number with a country code, by its last 10 digits (the key a create merges on)'],
      ['+44 555 777 1234', ['jose'], 'whatever the country code'],
      ['+1 555 010 300', [], 'but a longer term is not a beginning of the last 10'],
      ['0102000', [], 'not the middle of a number'],
      ['555 777 1234', ['jose'], 'spaces are formatting too'],
      ['331234', ['graceMarie'], 'a number longer than 10 digits, by its beginning'],
      ['312345', ['graceMarie'], 'or by the beginning of its last 10'],
      ['100%', ['percent'], 'a % is punctuation, not a wildcard'],
      ['_', [], 'nor is _'],
      ['--', [], 'a term of punctuation only matches nothing'],
      ['d', ['dana', 'graceMarie'], 'a lead with several words beginning with the term is found and counted once'],
      ['d dob', ['dana'], 'and so with several terms'],
    ]
    for (const [term, expected, why] of cases) {
      it(`${JSON.stringify(term)} finds ${expected.length === 0 ? 'nothing' : expected.join(', ')}: ${why}`, async function () {
        expect(await search(term)).to.deep.equal([...expected].sort())
      })
    }

    it('combines with filters and sorts, and pages the same way whichever way the page is found', async function () {
      expect(await search('grace', '&sort_by=created_at&sort_dir=desc')).to.deep.equal(['grace', 'graceMarie', 'gracefully'])
      expect(await search('grace', '&status=won')).to.deep.equal([])
      const pages: string[] = []
      let cursor: string | null = null
      do {
        const query = `${LEADS}?limit=1&search=grace${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const response = await daemon.request(query, {token: tenant.token, customerId: tenant.customer.id})
        expect(response.body.total).to.equal(3)
        pages.push(...response.body.leads.map((lead: {id: string}) => lead.id))
        cursor = response.body.next_cursor
      } while (cursor !== null && pages.length < 10)
      expect(names(pages)).to.deep.equal(['grace', 'graceMarie', 'gracefully'])
      const offset = await daemon.request(`${LEADS}?limit=1&offset=2&search=grace`, {token: tenant.token, customerId: tenant.customer.id})
      expect(offset.body.leads.map((lead: {id: string}) => lead.id)).to.deep.equal([pages[2]])
    })

    it('finds a common word by walking the sort order, with the same results and totals', async function () {
      const other = await newTenant(daemon.services)
      const zeds = Array.from({length: 60}, (_, i) =>
        leadRecord(other, {
          contactName: `Zed ${i % 2 ? 'Odd' : 'Even'} ${i}`,
          status: i % 3 ? 'active' : 'won',
          updatedAt: Date.now() + i,
          contactEmail: i === 7 ? 'zed7@example.org' : null,
        }),
      )
      await insertLeads(daemon.db, [...zeds, ...Array.from({length: 10}, () => leadRecord(other, {contactName: 'Someone Else'}))])
      const walk = async (query: string) => {
        const seen: string[] = []
        let cursor: string | null = null
        let total = -1
        do {
          const response = await daemon.request(`${LEADS}?limit=4&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
            token: other.token,
            customerId: other.customer.id,
          })
          expect(response.status).to.equal(200)
          total = response.body.total
          seen.push(...response.body.leads.map((lead: {id: string}) => lead.id))
          cursor = response.body.next_cursor
        } while (cursor !== null && seen.length <= 100)
        expect(seen.length, query).to.equal(total)
        return seen
      }
      const idsWhere = (keep: (lead: (typeof zeds)[number], i: number) => boolean) => zeds.filter(keep).map((lead) => lead.id)
      expect(await walk('search=zed')).to.deep.equal(idsWhere(() => true))
      expect(await walk('search=zed&sort_dir=desc')).to.deep.equal(idsWhere(() => true).reverse())
      expect(await walk('search=zed%20odd')).to.deep.equal(idsWhere((_, i) => i % 2 === 1))
      expect(await walk('search=zed&status=won')).to.deep.equal(idsWhere((_, i) => i % 3 === 0))
      expect(await walk('search=zed7')).to.deep.equal(idsWhere((_, i) => i === 7))
    })

    it(`runs at most ${SEARCHES_AT_ONCE} searches at once, and answers the same search asked meanwhile once`, async function () {
      const other = await newTenant(daemon.services, undefined, {roomy: true})
      await insertLeads(
        daemon.db,
        Array.from({length: 200}, (_, i) => leadRecord(other, {contactName: `Common ${i}`})),
      )
      // Counts how many searches of this customer read at once, and in all (a search counts its matches first).
      let reading = 0
      let most = 0
      let counted = 0
      const count = LeadQueryStore.prototype.count
      LeadQueryStore.prototype.count = async function (this: LeadQueryStore, customerId, filters) {
        if (customerId !== other.customer.id) return count.call(this, customerId, filters)
        counted++
        most = Math.max(most, ++reading)
        try {
          // Long enough that, unheld, all twenty would overlap, and the ten same ones all arrive meanwhile.
          await new Promise((resolve) => setTimeout(resolve, 100))
          return await count.call(this, customerId, filters)
        } finally {
          reading--
        }
      }
      const search = (query: string) => daemon.request(`${LEADS}?search=common&${query}`, {token: other.token, customerId: other.customer.id})
      try {
        // Twenty different searches: four at a time.
        const different = await Promise.all(Array.from({length: 20}, (_, i) => search(`limit=${i + 1}`)))
        expect(different.map((answer) => answer.status)).to.deep.equal(Array(20).fill(200))
        expect(different.map((answer) => answer.body.leads.length)).to.deep.equal(Array.from({length: 20}, (_, i) => i + 1))
        expect(different.every((answer) => answer.body.total === 200)).to.equal(true)
        expect(most).to.equal(SEARCHES_AT_ONCE)

        // Ten times the same search at once: counted once, the same answer to each.
        counted = 0
        const same = await Promise.all(Array.from({length: 10}, () => search('limit=5')))
        expect(new Set(same.map((answer) => answer.text)).size).to.equal(1)
        expect(same[0]!.body.total).to.equal(200)
        expect(counted).to.equal(1)
      } finally {
        LeadQueryStore.prototype.count = count
      }
    })

    it('follows renames and merges: old words stop matching, new ones match', async function () {
      const renamed = await postJson(daemon, tenant, LEADS, {contact_email: 'jose@example.org', contact_name: 'Joseph Nunez-Ortiz'})
      expect(renamed.body.merged).to.equal(true)
      expect(await search('ortiz')).to.deep.equal(['jose'])
      expect(await search('nunez')).to.deep.equal(['jose'])
      expect(await search('josé')).to.deep.equal(['jose'])
      // An address and a word: the word is checked on the lead's own words, which the merge rewrote.
      expect(await search('jose@example.org ortiz')).to.deep.equal(['jose'])
      expect(await search('jose@example.org jos')).to.deep.equal(['jose'])
      const bulk = await postJson(daemon, tenant, `${LEADS}/bulk`, {
        leads: [{contact_email: 'jose@example.org', contact_name: 'Pepe'}, {contact_name: 'Grace Again'}],
      })
      expect(bulk.status).to.equal(200)
      expect(await search('ortiz')).to.deep.equal([])
      expect(await search('pepe')).to.deep.equal(['jose'])
      expect(await search('jose@example.org pepe')).to.deep.equal(['jose'])
      expect(await search('jose@example.org ortiz')).to.deep.equal([])
      expect((await search('grace')).length).to.equal(4)
    })

    it('indexes every lead of a bulk with words, whatever the words hold, and a lead with none beside them', async function () {
      const other = await newTenant(daemon.services)
      const bulk = await postJson(daemon, other, `${LEADS}/bulk`, {
        leads: [
          {contact_name: 'Ada "Quote" Back\\slash', custom_fields: {lead_line: 'buyer'}},
          {contact_phone: '+1 555 010 9900'},
          // Letters outside the Basic Multilingual Plane, which no folding changes (CJK Extension B, Gothic).
          {contact_name: '\u{20000}\u{20001} \u{10330}\u{10331}', contact_email: "o'neil@example.org"},
        ],
      })
      expect(bulk.status, JSON.stringify(bulk.body)).to.equal(200)
      expect(bulk.body.results.map((row: {status: string}) => row.status)).to.deep.equal(['created', 'created', 'created'])
      const found = async (term: string, extra = '') => {
        const response = await daemon.request(`${LEADS}?search=${encodeURIComponent(term)}${extra}`, {token: other.token, customerId: other.customer.id})
        expect(response.status, response.text).to.equal(200)
        return response.body.leads.map((lead: {id: string}) => lead.id) as string[]
      }
      const [quoted, phoneOnly, distant] = bulk.body.results.map((row: {lead_id: string}) => row.lead_id)
      expect(await found('quote back')).to.deep.equal([quoted])
      expect(await found('slash')).to.deep.equal([quoted])
      expect(await found('ada', '&lead_line=buyer')).to.deep.equal([quoted])
      expect(await found('ada', '&lead_line=seller')).to.deep.equal([])
      expect(await found('5550109900')).to.deep.equal([phoneOnly])
      expect(await found('\u{20000}')).to.deep.equal([distant])
      expect(await found('\u{10330}\u{10331} o')).to.deep.equal([distant])
      expect(await found('neil')).to.deep.equal([distant])
    })

    it('removes the old words of a renamed lead by their keys, never by reading the whole table', async function () {
      const lead = leadRecord(tenant, {contactName: 'Ann', contactEmail: null})
      const statements = new LeadSearchIndex(daemon.db, new CustomersStore(daemon.db)).apply([{before: lead, after: {...lead, contactName: 'Bob'}}])
      const deletes = statements.filter((statement) => /^delete/i.test(statement.sql))
      expect(deletes).to.have.length(1)
      for (const {sql, bindings} of deletes) {
        if (backend.name === 'mysql') {
          // A row constructor IN (…) of one key was planned as a scan of every word (type ALL).
          const [plan] = (await daemon.db.raw(`EXPLAIN ${sql}`, [...bindings])) as [Array<{type: string; key: string | null}>]
          expect(plan.map((row) => [row.type, row.key])).to.deep.equal([['range', 'PRIMARY']])
        } else {
          const plan = (await daemon.db.raw(`EXPLAIN QUERY PLAN ${sql}`, [...bindings])) as Array<{detail: string}>
          expect(plan.map((row) => row.detail).join('; ')).to.match(/^(MULTI-INDEX OR; )?(INDEX \d+; )?SEARCH lead_search_words USING/)
        }
      }
    })

    it('searches an address ending in U+10FFFF, the highest code point, by the range of what begins with it', async function () {
      const other = await newTenant(daemon.services)
      const top = String.fromCodePoint(0x10ffff)
      // Written around the service: the API accepts only ASCII addresses, the range must still be right.
      const emails = {top: `a@${top}`, topMore: `a@${top}${top}x`, plain: 'a@example.org', next: 'aa@example.org', below: `a@${String.fromCodePoint(0x10fffe)}`}
      await insertLeads(
        daemon.db,
        Object.values(emails).map((email) => leadRecord(other, {contactName: null, contactEmail: email})),
      )
      const find = async (term: string) => {
        const response = await daemon.request(`${LEADS}?limit=100&search=${encodeURIComponent(term)}`, {token: other.token, customerId: other.customer.id})
        expect(response.status, response.text).to.equal(200)
        expect(response.body.total).to.equal(response.body.leads.length)
        return response.body.leads.map((lead: {contact_email: string}) => lead.contact_email).sort()
      }
      expect(await find(`a@${top}`)).to.deep.equal([emails.top, emails.topMore].sort())
      expect(await find(`a@${top}${top}`)).to.deep.equal([emails.topMore])
      expect(await find(`a@${top} a`)).to.deep.equal([emails.top, emails.topMore].sort())
      expect(await find(`zz@${top}`)).to.deep.equal([])
    })

    it('rebuilds the words of leads written around the service with reindex', async function () {
      const other = await newTenant(daemon.services)
      await insertLeads(daemon.db, [leadRecord(other, {contactName: 'Katherine Johnson'})])
      await daemon.db('lead_search_words').where({customer_id: other.customer.id}).delete()
      const find = async () => (await daemon.request(`${LEADS}?search=kath`, {token: other.token, customerId: other.customer.id})).body.total
      expect(await find()).to.equal(0)
      expect(await daemon.services.searchIndex.rebuild(other.customer.id)).to.equal(1)
      expect(await find()).to.equal(1)
    })

    it('reindex replaces the words of a lead renamed around the service: the old ones stop matching, everywhere', async function () {
      const other = await newTenant(daemon.services)
      const lead = leadRecord(other, {contactName: 'Dorothy Vaughan', contactEmail: 'dv@example.org'})
      await insertLeads(daemon.db, [lead])
      await daemon.db('leads').where({customer_id: other.customer.id, id: lead.id}).update({contact_name: 'Mary Jackson'})
      const found = async (term: string) =>
        (await daemon.request(`${LEADS}?search=${encodeURIComponent(term)}`, {token: other.token, customerId: other.customer.id})).body.total as number
      expect(await found('vaughan')).to.equal(1)
      expect(await daemon.services.searchIndex.rebuild(other.customer.id)).to.equal(1)
      expect(await found('vaughan')).to.equal(0)
      expect(await found('dv@example.org vaughan')).to.equal(0)
      expect(await found('jackson')).to.equal(1)
      expect(await found('dv@example.org jackson')).to.equal(1)
      expect(await daemon.db('lead_search_words').where({customer_id: other.customer.id}).orderBy('word').pluck('word')).to.deep.equal([
        'dv',
        'jackson',
        'mary',
      ])
      // A second reindex finds nothing to change and leaves the rows as they are.
      expect(await daemon.services.searchIndex.rebuild(other.customer.id)).to.equal(1)
      expect(await daemon.db('lead_search_words').where({customer_id: other.customer.id}).count({n: '*'})).to.deep.equal([{n: 3}])
    })
  })
})
