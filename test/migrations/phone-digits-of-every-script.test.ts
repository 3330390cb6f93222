import {expect} from 'chai'

import {up} from '../../migrations/20261128030000_read_phone_digits_of_every_script.js'
import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

describe('migration: phone digits of every script', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    before(async function () {
      daemon = await startTestDaemon(backend)
    })
    after(async function () {
      await daemon.stop()
    })

    it('reads the match keys of a stored phone mixing scripts again, so the same number in ASCII merges into it', async function () {
      const tenant = await newTenant(daemon.services)
      const mixed = leadRecord(tenant, {contactName: 'Mixed', contactPhone: '+1 ５55 010 2000'})
      const ascii = leadRecord(tenant, {contactName: 'Plain', contactPhone: '+44 20 7946 0001'})
      await insertLeads(daemon.db, [mixed, ascii])
      // As a build that read ASCII digits only stored them.
      await daemon.db('leads').where({customer_id: tenant.customer.id, id: mixed.id}).update({phone_digits: '1550102000', phone_last10: '1550102000'})

      await up(daemon.db)
      const keys = await daemon
        .db('leads')
        .where({customer_id: tenant.customer.id})
        .orderBy('contact_name')
        .select('contact_name', 'phone_digits', 'phone_last10')
      expect(keys).to.deep.equal([
        {contact_name: 'Mixed', phone_digits: '15550102000', phone_last10: '5550102000'},
        {contact_name: 'Plain', phone_digits: '442079460001', phone_last10: '2079460001'},
      ])
      const pushed = await postJson(daemon, tenant, '/api/agents/crm/leads', {contact_phone: '555 010 2000'})
      expect(pushed.body).to.include({merged: true})
      expect(pushed.body.lead.id).to.equal(mixed.id)
    })
  })
})
