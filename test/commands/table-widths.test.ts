import {expect} from 'chai'

import type {Db} from '../../src/db/knex.js'
import type {Services} from '../../src/services.js'
import {forEachBackend} from '../helpers/backends.js'
import {runCliAtTerminal, runCliAtWidth} from '../helpers/cli.js'
import {openServices} from '../helpers/fixtures.js'
import {openTestDb} from '../helpers/test-db.js'

const publicLookup = async () => [{address: '93.184.216.34', family: 4 as const}]
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g
const WIDTHS = [80, 120, 160]

/** What a terminal `columns` wide shows for `leads ARGS`, line by line, without colour. */
async function shownAt(args: string[], env: Record<string, string>, columns: number): Promise<string[]> {
  const result = await runCliAtWidth(args, {...env, NO_COLOR: '1'}, columns)
  expect(result.code, result.stdout).to.equal(0)
  return result.stdout
    .replace(ANSI, '')
    .split('\n')
    .filter((line) => line.trim() !== '')
}

/** The line that begins with `id`, which must be there whole. */
function lineOf(lines: string[], id: string): string {
  const line = lines.find((candidate) => candidate.split(/\s+/)[0] === id)
  expect(line, `a line beginning with ${id} in\n${lines.join('\n')}`).to.not.equal(undefined)
  return line!
}

/**
 * Tables at the widths operators use: what matters (ids, states, scopes, failure streaks, which
 * URL) is shown whole at 80, 120 and 160 columns, and a wider terminal never shows less of it.
 */
describe('tables at 80, 120 and 160 columns', function () {
  forEachBackend((backend) => {
    let env: Record<string, string>
    let db: Db
    let services: Services

    before(async function () {
      env = {...backend.env, LEADS_MASTER_KEY: 'ab'.repeat(32)}
      db = openTestDb(backend)
      services = await openServices(backend, {db, lookup: publicLookup})
    })
    after(async function () {
      await services.close()
      await db.destroy()
    })

    it('keys list shows each key id, state and scopes whole, and no customer column with --customer', async function () {
      const customerId = (await services.customers.create({name: 'Widths'})).id
      const every = await services.keys.issue({
        customerId,
        scopes: ['public_api:leads:read', 'public_api:leads:write', 'public_api:webhooks:manage'],
        name: 'a key with every scope and a name long enough to be cut at every width we try',
      })
      const reader = await services.keys.issue({customerId, scopes: ['public_api:leads:read'], name: 'reader'})
      await services.keys.revoke(reader.key.id)
      const expected = [
        {id: every.key.id, state: 'active', scopes: 'leads:read+write,webhooks:manage'},
        {id: reader.key.id, state: 'revoked', scopes: 'leads:read'},
      ]
      for (const width of WIDTHS) {
        const lines = await shownAt(['keys', 'list', '--customer', customerId], env, width)
        for (const line of lines) expect(line.length, `${width}: ${line}`).to.be.at.most(width)
        expect(lines[0], `${width}`).to.match(/^ID\s+STATE\s+SCOPES/)
        expect(lines[0], `${width}`).to.not.include('CUSTOMER')
        for (const key of expected) {
          const cells = lineOf(lines, key.id).split(/\s+/)
          expect(cells.slice(0, 3), `${width}`).to.deep.equal([key.id, key.state, key.scopes])
        }
        expect(lines, `${width}`).to.include('SCOPES: public_api: left out (common to all); a+b: both actions on one resource')
        // What is left out is named whole, over as many lines as it takes.
        const notShown = lines.slice(lines.findIndex((line) => line.startsWith('Not shown: '))).join(' ')
        if (width < 160) expect(notShown, `${width}`).to.match(/^Not shown: [a-z_, -]+ \(try --columns, --no-truncate or --json\)$/)
      }
      const all = await shownAt(['keys', 'list'], env, 160)
      expect(all[0]).to.match(/^ID\s+STATE\s+SCOPES\s+NAME\s+CUSTOMER/)
      expect(lineOf(all, every.key.id)).to.include(customerId)
    })

    it('webhooks list shows each webhook id, state, failure streak and the part of its URL that tells it apart', async function () {
      const customerId = (await services.customers.create({name: 'Widths'})).id
      const create = async (url: string) => (await services.webhooks.create(customerId, {url, event_types: ['lead.created']})).webhook
      const first = await create('https://hooks.receiver.example.com/crm/tenants/4711/inbound-leads')
      const second = await create('https://hooks.receiver.example.com/crm/tenants/0815/inbound-leads')
      await db('webhooks').where({customer_id: customerId, id: second.id}).update({is_active: false, consecutive_failures: 17})
      for (const width of WIDTHS) {
        const lines = await shownAt(['webhooks', 'list', '--customer', customerId], env, width)
        for (const line of lines) expect(line.length, `${width}: ${line}`).to.be.at.most(width)
        expect(lines[0], `${width}`).to.match(/^ID\s+STATE\s+FAILURES\s+URL/)
        expect(lines[0], `${width}`).to.not.include('CUSTOMER')
        expect(lineOf(lines, first.id).split(/\s+/).slice(0, 4), `${width}`).to.deep.equal([first.id, 'active', '0', '4711/inbound-leads'])
        expect(lineOf(lines, second.id).split(/\s+/).slice(0, 4), `${width}`).to.deep.equal([second.id, 'disabled', '17', '0815/inbound-leads'])
        expect(lines, `${width}`).to.include('URL: https://hooks.receiver.example.com/crm/tenants/ left out (common to all)')
      }
    })

    it('lays a table out 80 columns wide at a terminal that reports no width (0 columns), as an unsized pseudo-terminal does', async function () {
      const customerId = (await services.customers.create({name: 'Unsized'})).id
      const issued = await services.keys.issue({customerId, scopes: ['public_api:leads:read'], name: 'reader'})
      const lines = await shownAt(['keys', 'list', '--customer', customerId], env, 0)
      expect(lines[0]).to.match(/^ID\s+STATE\s+SCOPES/)
      expect(lineOf(lines, issued.key.id).split(/\s+/).slice(0, 3)).to.deep.equal([issued.key.id, 'active', 'leads:read'])
      for (const line of lines) expect(line.length, line).to.be.at.most(80)
    })

    it('prints a table taller than the terminal once, keeping the screen and its scrollback', async function () {
      const customerId = (await services.customers.create({name: 'Tall'})).id
      const issued = []
      for (let i = 0; i < 45; i++) issued.push((await services.keys.issue({customerId, scopes: ['public_api:leads:read'], name: `key ${i}`})).key.id)
      // The helper's terminal has 40 rows.
      const result = await runCliAtTerminal(['keys', 'list', '--customer', customerId], {...env, NO_COLOR: '1'}, '', 120)
      expect(result.code, result.stdout).to.equal(0)
      expect(result.stdout).to.not.match(/\u001b\[[23]J/)
      const lines = result.stdout.replace(ANSI, '').split('\n')
      expect(lines.filter((line) => /^ID\s+STATE/.test(line))).to.have.length(1)
      for (const id of issued)
        expect(
          lines.filter((line) => line.startsWith(id)),
          id,
        ).to.have.length(1)
    })
  })
})
