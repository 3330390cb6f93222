import {createHmac} from 'node:crypto'

import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {forEachBackend, TEST_MASTER_KEY} from '../helpers/backends.js'
import {newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon, type TestResponse} from '../helpers/test-daemon.js'

const LEADS = '/api/agents/crm/leads'

/** A cursor as versions before customer binding signed it: the same key and form, no customer in it. */
function unboundCursor(payload: Record<string, unknown>): string {
  const key = createHmac('sha256', Buffer.from(TEST_MASTER_KEY, 'hex')).update('leads-list-cursor-v1').digest()
  const encoded = Buffer.from(JSON.stringify(payload)).toString('base64url')
  return `${encoded}.${createHmac('sha256', key).update(encoded).digest().subarray(0, 16).toString('base64url')}`
}

function expectForeignCursor(response: TestResponse): void {
  expect(response.status).to.equal(400)
  expect(response.body.error).to.include({type: 'invalid_request_error', code: 400, param: 'cursor'})
  expect(response.body.error.message).to.match(/not issued for this customer/)
}

describe('cursors are bound to the customer they were issued for', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let owner: TestTenant
    let other: TestTenant
    const get = (as: TestTenant, query: string, token = as.token) => daemon.request(`${LEADS}?${query}`, {token, customerId: as.customer.id})

    before(async function () {
      daemon = await startTestDaemon(backend)
      owner = await newTenant(daemon.services)
      other = await newTenant(daemon.services)
      for (const tenant of [owner, other]) {
        for (const name of ['First', 'Second', 'Third'])
          expect((await postJson(daemon, tenant, LEADS, {contact_name: `${name} of ${tenant.customer.id}`})).status).to.equal(201)
      }
    })
    after(async function () {
      await daemon.stop()
    })

    for (const [what, query] of [
      ['a sorted-list cursor', 'sort_by=updated_at&sort_dir=asc&limit=1'],
      ['a change-feed position (sync=true)', 'sync=true&limit=1'],
    ] as const) {
      it(`refuses ${what} of another customer with 400 naming cursor`, async function () {
        const first = await get(owner, query)
        expect(first.status).to.equal(200)
        const cursor = encodeURIComponent(first.body.next_cursor)
        expectForeignCursor(await get(other, `${query}&cursor=${cursor}`))
        // Any key of the owner's, such as one issued after a rotation, keeps paging with it.
        const second = await daemon.services.keys.issue({customerId: owner.customer.id, scopes: ['public_api:leads:read']})
        const next = await get(owner, `${query}&cursor=${cursor}`, second.token)
        expect(next.status).to.equal(200)
        expect(next.body.leads[0].contact_name).to.equal(`Second of ${owner.customer.id}`)
      })
    }

    describe('issued before the binding (no customer in them)', function () {
      let firstLead: {id: string; updated_at: string}

      before(async function () {
        firstLead = (await get(owner, 'sort_by=updated_at&sort_dir=asc&limit=1')).body.leads[0]
      })

      it('keep working for the customer whose lead they point at, and return bound cursors', async function () {
        const list = unboundCursor({s: 'updated_at', d: 'asc', v: Date.parse(firstLead.updated_at), i: firstLead.id})
        const page = await get(owner, `sort_by=updated_at&sort_dir=asc&limit=1&cursor=${encodeURIComponent(list)}`)
        expect(page.status).to.equal(200)
        expect(page.body.leads[0].contact_name).to.equal(`Second of ${owner.customer.id}`)
        expectForeignCursor(await get(other, `sort_by=updated_at&sort_dir=asc&limit=1&cursor=${encodeURIComponent(page.body.next_cursor)}`))

        const feed = await get(owner, 'sync=true&limit=1')
        const [payload] = (feed.body.next_cursor as string).split('.')
        const {q} = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as {q: number}
        const sync = unboundCursor({k: 'sync', q, i: feed.body.leads[0].id, u: null})
        const synced = await get(owner, `sync=true&limit=1&cursor=${encodeURIComponent(sync)}`)
        expect(synced.status).to.equal(200)
        expect(synced.body.leads[0].contact_name).to.equal(`Second of ${owner.customer.id}`)
      })

      it('are refused for another customer', async function () {
        const list = unboundCursor({s: 'updated_at', d: 'asc', v: Date.parse(firstLead.updated_at), i: firstLead.id})
        expectForeignCursor(await get(other, `sort_by=updated_at&sort_dir=asc&limit=1&cursor=${encodeURIComponent(list)}`))
        const sync = unboundCursor({k: 'sync', q: 1, i: firstLead.id, u: null})
        expectForeignCursor(await get(other, `sync=true&limit=1&cursor=${encodeURIComponent(sync)}`))
      })
    })
  })
})
