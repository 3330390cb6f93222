import {expect} from 'chai'

import {postJson} from '../helpers/api.js'
import {forEachBackend} from '../helpers/backends.js'
import {insertLeads, leadRecord, newTenant, type TestTenant} from '../helpers/fixtures.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

const CREATE = '/api/agents/crm/leads'
const BULK = '/api/agents/crm/leads/bulk'
const LEAD_LINES = ['buyer', 'seller', null] as const

/** A small deterministic generator (mulberry32), so a failing mix can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * `total` of an unfiltered or equality-filtered list comes from counts the write paths keep;
 * after any mix of writes it must equal COUNT(*) over the same filters.
 */
describe('kept lead counts', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon
    let tenant: TestTenant

    before(async function () {
      daemon = await startTestDaemon(backend)
    })
    beforeEach(async function () {
      tenant = await newTenant(daemon.services, undefined, {roomy: true})
    })
    after(async function () {
      await daemon.stop()
    })

    /** Every combination of the equality filters, each as a query string and the matching SQL predicate. */
    const combinations = () => {
      const statuses = [undefined, 'active', 'won']
      const stages = [undefined, ...tenant.stages.slice(0, 3)]
      const lines = [undefined, 'buyer', 'seller']
      return statuses.flatMap((status) =>
        stages.flatMap((stage) =>
          lines.map((line) => ({
            query: [status && `status=${status}`, stage && `stageId=${stage.id}`, line && `lead_line=${line}`].filter(Boolean).join('&'),
            where: {customer_id: tenant.customer.id, ...(status && {status}), ...(stage && {stage_id: stage.id}), ...(line && {lead_line: line})},
          })),
        ),
      )
    }
    const expectTotalsMatchRows = async () => {
      for (const {query, where} of combinations()) {
        const response = await daemon.request(`${CREATE}?limit=1&${query}`, {token: tenant.token, customerId: tenant.customer.id})
        expect(response.status, query).to.equal(200)
        const [row] = (await daemon.db('leads').where(where).count({n: '*'})) as Array<{n: number | string}>
        expect(response.body.total, query || 'no filter').to.equal(Number(row!.n))
      }
    }

    it('equal COUNT(*) for every filter combination after a random mix of creates, merges and bulk upserts, some concurrent', async function () {
      this.timeout(60_000)
      const next = random(20261123)
      const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!
      // Few people, so many writes merge and move a lead between stages and lead lines.
      const person = () => {
        const n = Math.floor(next() * 40)
        return next() < 0.5 ? {contact_email: `person${n}@example.org`} : {contact_phone: `555-010-${String(n).padStart(4, '0')}`}
      }
      const lead = () => ({
        ...person(),
        contact_name: `P ${Math.floor(next() * 1000)}`,
        stage_slug: pick(tenant.stages).slug,
        custom_fields: {lead_line: pick(LEAD_LINES)},
      })
      for (let round = 0; round < 12; round++) {
        const writes = Array.from({length: 6}, () => {
          if (next() < 0.3)
            return postJson(daemon, tenant, BULK, {leads: Array.from({length: 1 + Math.floor(next() * 30)}, lead), on_duplicate: pick(['update', 'skip'])})
          return postJson(daemon, tenant, CREATE, lead())
        })
        for (const response of await Promise.all(writes)) expect(response.status, JSON.stringify(response.body)).to.be.oneOf([200, 201])
      }
      // Seeded leads (straight into the store) with other statuses count too.
      await insertLeads(
        daemon.db,
        Array.from({length: 20}, (_, i) => leadRecord(tenant, {status: i % 2 ? 'won' : 'lost', stageId: tenant.stages[i % 3]!.id, leadLine: pick(LEAD_LINES)})),
      )
      await expectTotalsMatchRows()
    })

    it('are rebuilt from the leads by recount, for one customer or all', async function () {
      await insertLeads(
        daemon.db,
        Array.from({length: 15}, (_, i) => leadRecord(tenant, {stageId: tenant.stages[i % 2]!.id, leadLine: i % 3 ? 'buyer' : null})),
      )
      const other = await newTenant(daemon.services)
      await insertLeads(daemon.db, [leadRecord(other)])
      // Drift, as a restore or a write around the service would leave it.
      await daemon.db('lead_counts').where({customer_id: tenant.customer.id}).update({n: 99})
      await daemon.db('lead_counts').where({customer_id: other.customer.id}).delete()
      expect(await daemon.services.leadCounts.recount(tenant.customer.id)).to.equal(1)
      await expectTotalsMatchRows()
      expect(await daemon.services.leadCounts.total(other.customer.id, {})).to.equal(0)
      expect(await daemon.services.leadCounts.recount()).to.be.at.least(2)
      expect(await daemon.services.leadCounts.total(other.customer.id, {})).to.equal(1)
    })
  })
})
