import {expect} from 'chai'

import type {Services} from '../../src/services.js'
import {forEachBackend} from '../helpers/backends.js'
import {newTenant, openServices} from '../helpers/fixtures.js'
import {ManualClock} from '../helpers/manual-clock.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

describe('revocation across processes', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let operator: Services
    const clock = new ManualClock(Date.now())

    before(async function () {
      daemon = await startTestDaemon(backend, {clock})
      // A second set of services on the same database stands for `leads keys revoke` elsewhere.
      operator = await openServices(backend, {clock})
    })
    after(async function () {
      await operator.close()
      await daemon.stop()
    })

    it('refuses a key revoked by another process once its 2 s cache entry lapses (bound: 5 s)', async function () {
      const tenant = await newTenant(operator)
      const call = () => daemon.request('/api/agents/crm/leads', {token: tenant.token, customerId: tenant.customer.id})
      expect((await call()).status).to.equal(200)
      await operator.keys.revoke(tenant.key.id)
      clock.advance(1999)
      expect((await call()).status).to.equal(200)
      clock.advance(1)
      expect((await call()).status).to.equal(401)
    })

    it('accepts a rotated token at once and refuses the old one within the same bound', async function () {
      const tenant = await newTenant(operator)
      const call = (token: string) => daemon.request('/api/agents/crm/leads', {token, customerId: tenant.customer.id})
      expect((await call(tenant.token)).status).to.equal(200)
      const rotated = await operator.keys.rotate(tenant.key.id)
      expect((await call(rotated.token)).status).to.equal(200)
      clock.advance(2000)
      expect((await call(tenant.token)).status).to.equal(401)
    })
  })
})
