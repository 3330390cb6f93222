import {expect} from 'chai'

import {CustomersStore} from '../../../src/customers/customers-store.js'
import type {Db} from '../../../src/db/knex.js'
import type {Services} from '../../../src/services.js'
import {WebhooksStore} from '../../../src/webhooks/webhooks-store.js'
import {forEachBackend} from '../../helpers/backends.js'
import {openServices} from '../../helpers/fixtures.js'
import {openTestDb} from '../../helpers/test-db.js'

// A create that kept the customer's lead.created subscribers trusts them while the setup version
// stands (CreateGuess): every change of which webhooks an event goes to must move it.
describe('WebhooksStore and the customer setup version', function () {
  forEachBackend((backend) => {
    let services: Services
    let db: Db
    let store: WebhooksStore

    before(async function () {
      services = await openServices(backend)
      db = openTestDb(backend)
      store = new WebhooksStore(db, new CustomersStore(db))
    })
    after(async function () {
      await services.close()
      await db.destroy()
    })

    async function setupVersion(customerId: string): Promise<number> {
      const row = (await db('customers').where({id: customerId}).first('setup_version')) as {setup_version: number | string}
      return Number(row.setup_version)
    }

    it('moves with every insert, delete and change of is_active or event_types, and with nothing else', async function () {
      const customer = await services.customers.create({name: 'setup version'})
      const moves = async (change: () => Promise<unknown>): Promise<boolean> => {
        const before = await setupVersion(customer.id)
        await change()
        return (await setupVersion(customer.id)) !== before
      }
      let id = ''
      expect(
        await moves(async () => {
          id = (await services.webhooks.create(customer.id, {url: 'https://93.184.216.34/hook', event_types: ['lead.created']})).webhook.id
        }),
      ).to.equal(true)
      const now = Date.now()
      expect(await moves(() => store.update(customer.id, id, {isActive: false, updatedAt: now})), 'switched off').to.equal(true)
      expect(await moves(() => store.update(customer.id, id, {isActive: true, updatedAt: now})), 'switched on').to.equal(true)
      expect(await moves(() => store.update(customer.id, id, {eventTypes: ['lead.created'], updatedAt: now})), 'event types').to.equal(true)
      expect(await moves(() => store.updateAnswered(customer.id, id, {isActive: false, updatedAt: now}, [], () => [])), 'answered').to.equal(true)
      expect(await moves(() => store.update(customer.id, id, {description: 'quiet', maxInFlight: 4, updatedAt: now})), 'description').to.equal(false)
      expect(await moves(() => store.recordFailure(id, now)), 'a failure').to.equal(false)
      expect(await moves(() => store.setBreaker({customerId: customer.id, id}, {state: 'open', until: now, openedAt: now})), 'breaker').to.equal(false)
      expect(await moves(() => services.webhooks.delete(customer.id, id)), 'deleted').to.equal(true)
    })
  })
})
