import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {inTransaction} from '../../src/db/transaction.js'
import {runEach} from '../../src/db/statements.js'
import {createStores} from '../../src/stores.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LEADS = '/api/agents/crm/leads'

/**
 * A search with filters is answered from the word rows, which carry the lead's status, stage and
 * lead line (src/leads/lead-search-store.ts): every write that changes one of them must change
 * the rows, or a search with filters finds a lead by what it no longer is.
 */
describe('search with filters', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant

    /** The names a search with filters finds, checked against its total. */
    const find = async (query: string) => {
      const response = await daemon.request(`${LEADS}?limit=100&${query}`, {token: tenant.token, customerId: tenant.customer.id})
      expect(response.status, JSON.stringify(response.body)).to.equal(200)
      const names = response.body.leads.map((lead: {contact_name: string}) => lead.contact_name).sort()
      expect(response.body.total, `total for ${query}`).to.equal(names.length)
      return names
    }

    before(async function () {
      daemon = await startTestDaemon(backend)
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
    })
    after(async function () {
      await daemon.stop()
    })

    it('follows a merge that moves a lead to another stage and lead line', async function () {
      const [first, second] = tenant.stages
      await postJson(daemon, tenant, LEADS, {contact_name: 'Grace Stagey', contact_email: 'grace.stagey@example.org'})
      await postJson(daemon, tenant, LEADS, {contact_name: 'Grace Other', custom_fields: {lead_line: 'seller'}})
      expect(await find(`search=grace&stageId=${first!.id}`)).to.deep.equal(['Grace Other', 'Grace Stagey'])
      expect(await find('search=grace&lead_line=buyer')).to.deep.equal([])

      const merged = await postJson(daemon, tenant, LEADS, {
        contact_email: 'grace.stagey@example.org',
        stage_slug: second!.slug,
        custom_fields: {lead_line: 'buyer'},
      })
      expect(merged.body.merged).to.equal(true)
      expect(await find(`search=grace&stageId=${first!.id}`)).to.deep.equal(['Grace Other'])
      expect(await find(`search=grace&stageId=${second!.id}`)).to.deep.equal(['Grace Stagey'])
      expect(await find('search=grace&lead_line=buyer')).to.deep.equal(['Grace Stagey'])
      expect(await find('search=grace%20sta&lead_line=buyer')).to.deep.equal(['Grace Stagey'])
      expect(await find('search=grace%20sta&lead_line=seller')).to.deep.equal([])
      expect(await find(`search=grace&lead_line=buyer&stageId=${second!.id}&sort_dir=desc`)).to.deep.equal(['Grace Stagey'])

      // A bulk merge that renames the lead and moves its lead line: old words and old filters both stop matching.
      const bulk = await postJson(daemon, tenant, `${LEADS}/bulk`, {
        leads: [{contact_email: 'grace.stagey@example.org', contact_name: 'Ada Stagey', custom_fields: {lead_line: 'seller'}}],
      })
      expect(bulk.status, JSON.stringify(bulk.body)).to.equal(200)
      // Still found by grace: its email begins with it.
      expect(await find('search=grace&lead_line=seller')).to.deep.equal(['Ada Stagey', 'Grace Other'])
      expect(await find('search=grace%20stagey&lead_line=buyer')).to.deep.equal([])
      expect(await find('search=stagey&lead_line=buyer')).to.deep.equal([])
      expect(await find('search=stagey&lead_line=seller')).to.deep.equal(['Ada Stagey'])
      expect(await find('search=ada%20stag&lead_line=seller')).to.deep.equal(['Ada Stagey'])
      expect(await find(`search=ada&stageId=${second!.id}&lead_line=seller`)).to.deep.equal(['Ada Stagey'])
    })

    it('gives each lead of one bulk its own filters when their stages and lead lines differ', async function () {
      const [first, second] = tenant.stages
      const leads = [
        {contact_name: 'Mixta Plain'},
        {contact_name: 'Mixta Staged', stage_slug: second!.slug},
        {contact_name: 'Mixta Buyer', custom_fields: {lead_line: 'buyer'}},
        {contact_name: 'Mixta Staged Seller', stage_slug: second!.slug, custom_fields: {lead_line: 'seller'}},
        {contact_name: 'Mixta Other Plain'},
      ]
      const bulk = await postJson(daemon, tenant, `${LEADS}/bulk`, {leads})
      expect(bulk.status, JSON.stringify(bulk.body)).to.equal(200)
      expect(bulk.body.results.map((row: {status: string}) => row.status)).to.deep.equal(leads.map(() => 'created'))
      expect(await find(`search=mixta&stageId=${first!.id}`)).to.deep.equal(['Mixta Buyer', 'Mixta Other Plain', 'Mixta Plain'])
      expect(await find(`search=mixta&stageId=${second!.id}`)).to.deep.equal(['Mixta Staged', 'Mixta Staged Seller'])
      expect(await find(`search=mixta&stageId=${first!.id}&lead_line=buyer`)).to.deep.equal(['Mixta Buyer'])
      expect(await find(`search=mixta%20sel&stageId=${second!.id}&lead_line=seller`)).to.deep.equal(['Mixta Staged Seller'])
      expect(await find(`search=mixta%20plain&stageId=${first!.id}`)).to.deep.equal(['Mixta Other Plain', 'Mixta Plain'])
    })

    it('gives each lead written in one statement its own status', async function () {
      await insertLeads(daemon.db, [
        leadRecord(tenant, {contactName: 'Statia Active'}),
        leadRecord(tenant, {contactName: 'Statia Won', status: 'won'}),
        leadRecord(tenant, {contactName: 'Statia Lost', status: 'lost', leadLine: 'buyer'}),
        leadRecord(tenant, {contactName: 'Statia Also Won', status: 'won'}),
      ])
      expect(await find('search=statia&status=active')).to.deep.equal(['Statia Active'])
      expect(await find('search=statia&status=won')).to.deep.equal(['Statia Also Won', 'Statia Won'])
      expect(await find('search=statia&status=lost&lead_line=buyer')).to.deep.equal(['Statia Lost'])
      expect(await find('search=statia%20al&status=won')).to.deep.equal(['Statia Also Won'])
    })

    it('follows a change of status written by the store, and counts with the time filters too', async function () {
      const lead = leadRecord(tenant, {contactName: 'Linus Statusy', contactEmail: 'linus.statusy@example.org'})
      await insertLeads(daemon.db, [lead])
      expect(await find('search=statusy&status=active')).to.deep.equal(['Linus Statusy'])
      expect(await find('search=statusy&status=won')).to.deep.equal([])

      const {leadWrites} = await createStores(daemon.db)
      const won = {...lead, status: 'won' as const, updatedAt: lead.updatedAt + 1}
      await inTransaction(daemon.db, (trx) => runEach(trx, leadWrites.upsertStatements([won], new Map([[lead.id, lead]]))))
      expect(await find('search=statusy&status=active')).to.deep.equal([])
      expect(await find('search=statusy&status=won')).to.deep.equal(['Linus Statusy'])
      expect(await find('search=linus%20stat&status=won')).to.deep.equal(['Linus Statusy'])
      const since = new Date(lead.updatedAt).toISOString()
      expect(await find(`search=statusy&status=won&updated_since=${encodeURIComponent(since)}`)).to.deep.equal(['Linus Statusy'])
      expect(await find(`search=statusy&status=active&updated_since=${encodeURIComponent(since)}`)).to.deep.equal([])
    })

    it('rebuilds the filters with the words when leads were written around the service', async function () {
      const lead = leadRecord(tenant, {contactName: 'Barbara Rebuilt', status: 'lost'})
      await insertLeads(daemon.db, [lead])
      // Changed around the service: the word rows still say lost and Barbara Rebuilt until a reindex.
      await daemon.db('leads').where({customer_id: tenant.customer.id, id: lead.id}).update({status: 'nurture', contact_name: 'Barbara Rebuilt Again'})
      await daemon.services.searchIndex.rebuild(tenant.customer.id)
      expect(await find('search=barbara&status=lost')).to.deep.equal([])
      expect(await find('search=barbara%20again&status=nurture')).to.deep.equal(['Barbara Rebuilt Again'])
    })
  })
})
