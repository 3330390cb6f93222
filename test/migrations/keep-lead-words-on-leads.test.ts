import {expect} from 'chai'

import {down, up} from '../../migrations/20261128040000_keep_lead_words_on_leads.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const LEADS = '/api/agents/crm/leads'

describe('migration: a lead’s words on the lead', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    before(async function () {
      daemon = await startTestDaemon(backend)
    })
    after(async function () {
      await daemon.stop()
    })

    it('writes every word row afresh and each lead’s words on its row, and drops the (lead_id, word) index', async function () {
      this.timeout(60_000)
      const tenant = await newTenant(daemon.services)
      const grace = leadRecord(tenant, {contactName: 'Grace Hopper', contactEmail: 'grace@example.org'})
      const unnamed = leadRecord(tenant, {contactName: null, contactEmail: null, contactPhone: '+1 555 010 4000'})
      await insertLeads(daemon.db, [grace, unnamed])
      await down(daemon.db)
      // As an older build left them: a word its tokenizer wrote that today's does not.
      await daemon.db('lead_search_words').insert({
        customer_id: tenant.customer.id,
        word: 'grâce',
        lead_id: grace.id,
        status: grace.status,
        stage_id: grace.stageId,
        lead_line: null,
        words: ' grâce hopper grace',
      })

      await up(daemon.db)
      const words = await daemon.db('lead_search_words').where({customer_id: tenant.customer.id}).orderBy('word').pluck('word')
      expect(words).to.deep.equal(['grace', 'hopper'])
      const stored = await daemon.db('leads').where({customer_id: tenant.customer.id}).orderBy('contact_name').select('contact_name', 'search_words')
      expect(stored).to.deep.equal([
        {contact_name: null, search_words: null},
        {contact_name: 'Grace Hopper', search_words: ' grace hopper'},
      ])
      const find = async (term: string) =>
        (await daemon.request(`${LEADS}?search=${encodeURIComponent(term)}`, {token: tenant.token, customerId: tenant.customer.id})).body.total as number
      expect(await find('grace@example.org hop')).to.equal(1)
      expect(await find('grace@example.org ada')).to.equal(0)
      const indexes =
        backend.name === 'mysql'
          ? (
              (await daemon.db.raw(
                "SELECT index_name AS name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'lead_search_words'",
              )) as unknown as [Array<{name: string}>]
            )[0]
          : ((await daemon.db.raw("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'lead_search_words'")) as Array<{name: string}>)
      expect(indexes.map((index) => index.name)).to.not.include('lead_search_words_lead_id_word_index')
    })
  })
})
