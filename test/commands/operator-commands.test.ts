import {expect} from 'chai'

import {KeysStore} from '../../src/keys/keys-store.js'
import {hashToken} from '../../src/keys/tokens.js'
import type {Db} from '../../src/db/knex.js'
import type {Services} from '../../src/services.js'
import {forEachBackend} from '../helpers/backends.js'
import {runCli, runCliAtTerminal, runCliAtWidth, runCliJson, runCliProcess} from '../helpers/cli.js'
import {insertLeads, leadRecord, openServices} from '../helpers/fixtures.js'
import {openTestDb} from '../helpers/test-db.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe('operator commands', function () {
  forEachBackend((backend) => {
    let env: Record<string, string>
    let db: Db
    let services: Services
    let customerId: string

    before(async function () {
      env = {...backend.env, LEADS_MASTER_KEY: 'ab'.repeat(32)}
      db = openTestDb(backend)
      services = await openServices(backend, {db})
    })
    // Each test gets a customer of its own, so none depends on another having run.
    beforeEach(async function () {
      customerId = (await services.customers.create({name: 'Operator test'})).id
    })
    after(async function () {
      await services.close()
      await db.destroy()
    })

    it('migrate --status --json lists every migration as applied', async function () {
      const output = await runCliJson(['migrate', '--status'], env)
      expect(output.migrations.length).to.be.greaterThan(0)
      expect(output.migrations.every((m: {applied: boolean}) => m.applied)).to.equal(true)
      expect(await runCliJson(['migrate'], env)).to.deep.equal({applied: []})
    })

    it('maintenance recount and reindex rebuild the kept counts and search words of one customer, and refuse an unknown one', async function () {
      const stages = await services.customers.listStages(customerId)
      await insertLeads(
        db,
        Array.from({length: 3}, () => leadRecord({customer: {id: customerId}, stages})),
      )
      await db('lead_counts').where({customer_id: customerId}).delete()
      const plain = await runCli(['maintenance', 'recount', '--customer', customerId], env)
      expect(plain.code, plain.stderr).to.equal(0)
      expect(plain.stdout).to.equal('Recounted the leads of 1 customer.\n')
      expect(await services.leadCounts.total(customerId, {})).to.equal(3)
      await db('lead_search_words').where({customer_id: customerId}).delete()
      expect(await runCliJson(['maintenance', 'reindex', '--customer', customerId], env)).to.deep.equal({leads: 3})
      expect(await db('lead_search_words').where({customer_id: customerId, word: 'test'}).count({n: '*'})).to.deep.equal([{n: 3}])
      const unknown = await runCli(['maintenance', 'recount', '--customer', '00000000-0000-4000-8000-000000000000'], env)
      expect(unknown.code).to.equal(1)
      expect(unknown.stderr).to.match(/customer 00000000-0000-4000-8000-000000000000 does not exist.*leads customers list/)
    })

    it('customers create prints the id, and --json the customer', async function () {
      const plain = await runCli(['customers', 'create', '--name', 'Plain Co'], env)
      expect(plain.code).to.equal(0)
      expect(plain.stdout.trim()).to.match(UUID)
      const created = await runCliJson(['customers', 'create', '--name', 'Acme Realty'], env)
      expect(created).to.have.keys(['id', 'name', 'created_at'])
      expect(created.name).to.equal('Acme Realty')
      const list = await runCliJson(['customers', 'list'], env)
      expect(list.customers.map((c: {id: string}) => c.id)).to.include(created.id)
    })

    it('keys issue shows the token once and stores only its hash', async function () {
      const issued = await runCliJson(
        [
          'keys',
          'issue',
          '--customer',
          customerId,
          '--scope',
          'public_api:leads:read',
          '--scope',
          'public_api:leads:write',
          '--name',
          'sync',
          '--expires-in',
          '90d',
        ],
        env,
      )
      expect(issued).to.include({customer_id: customerId, name: 'sync', internal: false, state: 'active'})
      expect(issued.token).to.match(/^svc_[0-9a-f]{64}$/)
      expect(issued.scopes).to.deep.equal(['public_api:leads:read', 'public_api:leads:write'])
      expect(Date.parse(issued.expires_at) - Date.parse(issued.created_at)).to.equal(90 * 86_400_000)
      const grant = await new KeysStore(db).findByTokenHash(hashToken(issued.token))
      expect(grant?.key.id).to.equal(issued.id)

      const plain = await runCli(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      expect(plain.stdout).to.match(/API token: svc_[0-9a-f]{64}/)
      expect(plain.stdout).to.include('cannot be shown again')
    })

    it('keys issue refuses an --expires-in of zero, which would issue a key already expired, and stores no key', async function () {
      for (const lifetime of ['0d', '0s', '0ms']) {
        const result = await runCli(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--expires-in', lifetime], env)
        expect(result.code, lifetime).to.equal(1)
        expect(result.stdout).to.equal('')
        expect(result.stderr).to.equal(
          'Error: expires-in must be longer than zero: the key would be expired when issued (hint: give a lifetime such as 90d, or leave --expires-in out for a key that never expires)\n',
        )
      }
      expect(await db('api_keys').where({customer_id: customerId}).count({n: '*'})).to.deep.equal([{n: 0}])
    })

    it('keys list never prints a token', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:webhooks:manage', '--internal'], env)
      const listed = await runCliJson(['keys', 'list', '--customer', customerId], env)
      const mine = listed.keys.find((key: {id: string}) => key.id === issued.id)
      expect(mine).to.have.keys([
        'id',
        'name',
        'customer_id',
        'scopes',
        'internal',
        'state',
        'created_at',
        'last_used_at',
        'expires_at',
        'previous_token_retires_at',
      ])
      expect(mine.internal).to.equal(true)
      const plain = await runCli(['keys', 'list', '--customer', customerId], env)
      expect(plain.stdout).to.include(issued.id)
      expect(plain.stdout).not.to.include(issued.token)
      expect(JSON.stringify(listed)).not.to.include('svc_')
    })

    it('keys rotate keeps the id and reports when the old token retires; revoke marks it revoked', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const rotated = await runCliJson(['keys', 'rotate', issued.id, '--grace', '1h'], env)
      expect(rotated.id).to.equal(issued.id)
      expect(rotated.token)
        .to.match(/^svc_[0-9a-f]{64}$/)
        .and.not.equal(issued.token)
      expect(Date.parse(rotated.previous_token_retires_at) - Date.now()).to.be.within(3_500_000, 3_600_000)
      const revoked = await runCliJson(['keys', 'revoke', issued.id, '--yes'], env)
      expect(revoked).to.include({id: issued.id, state: 'revoked'})
      const again = await runCli(['keys', 'rotate', issued.id, '--yes'], env)
      expect(again.code).to.equal(1)
      expect(again.stderr).to.match(/^Error: key .* is revoked; issue a new key instead \(hint: .*\)\n$/)
    })

    it('keys rotate --grace takes at most 30d, and refuses more with one line naming the flag, before any change', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const tokens = async () => Number((await db('api_tokens').where({key_id: issued.id}).count({n: '*'}))[0]!.n)
      for (const grace of ['31d', '400d', '721h']) {
        const refused = await runCli(['keys', 'rotate', issued.id, '--grace', grace], env)
        expect(refused.code, grace).to.equal(1)
        expect(refused.stderr).to.equal(
          `Error: grace must be at most 30d, got "${grace}" (hint: the old token keeps working all that time; give the client the new token within 30 days)\n`,
        )
      }
      expect(await tokens()).to.equal(1)
      const longest = await runCliJson(['keys', 'rotate', issued.id, '--grace', '30d'], env)
      expect(Date.parse(longest.previous_token_retires_at) - Date.now()).to.be.within(30 * 86_400_000 - 60_000, 30 * 86_400_000)
      expect(await tokens()).to.equal(2)
    })

    it('keys revoke of a key already revoked says so and when, changes nothing and exits 0, without asking', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const first = await runCliJson(['keys', 'revoke', issued.id, '--yes'], env)
      expect(first).to.include({id: issued.id, state: 'revoked', already_revoked: false})
      expect(Date.parse(first.revoked_at)).to.be.within(Date.now() - 60_000, Date.now())
      const again = await runCli(['keys', 'revoke', issued.id], env)
      expect(again.code, again.stderr).to.equal(0)
      expect(again.stdout).to.equal(`Key ${issued.id} was already revoked at ${first.revoked_at}; nothing changed.\n`)
      const json = await runCliJson(['keys', 'revoke', issued.id, '--yes'], env)
      expect(json).to.include({id: issued.id, state: 'revoked', already_revoked: true, revoked_at: first.revoked_at})
    })

    it('keys issue refuses an empty or blank --name with one line, as customers create does, and stores no key', async function () {
      for (const name of ['', '   ']) {
        const refused = await runCli(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--name', name], env)
        expect(refused.code, JSON.stringify(name)).to.equal(1)
        expect(refused.stderr).to.equal('Error: name must not be empty (hint: leave --name out for a key without a name)\n')
        const customer = await runCli(['customers', 'create', '--name', name], env)
        expect(customer.code).to.equal(1)
        expect(customer.stderr).to.equal('Error: name must not be empty (hint: give a name of 1 to 200 characters)\n')
      }
      expect(await db('api_keys').where({customer_id: customerId}).count({n: '*'})).to.deep.equal([{n: 0}])
      const unnamed = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      expect(unnamed.name).to.equal(null)
    })

    it('keys rotate without --grace asks first, as revoke does, and refuses without --yes off a terminal', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const tokens = async () => Number((await db('api_tokens').where({key_id: issued.id}).count({n: '*'}))[0]!.n)
      const scripted = await runCli(['keys', 'rotate', issued.id], env)
      expect(scripted.code).to.equal(1)
      expect(scripted.stderr).to.equal(
        'Error: refusing to go on without confirmation: not at a terminal (hint: add --yes to confirm, or --grace 1h to keep the old token working meanwhile)\n',
      )
      const declined = await runCliAtTerminal(['keys', 'rotate', issued.id], env, 'n\n')
      expect(declined.stdout).to.include(`Rotate key ${issued.id}? Its current token stops working now (--grace keeps it working for a while). [y/N]`)
      expect(declined.code).to.equal(1)
      expect(await tokens()).to.equal(1)
      const accepted = await runCliAtTerminal(['keys', 'rotate', issued.id], env, 'y\n')
      expect(accepted.code, accepted.stdout).to.equal(0)
      expect(accepted.stdout).to.include('stopped working now')
      expect(await tokens()).to.equal(2)
      const yes = await runCli(['keys', 'rotate', issued.id, '--yes'], env)
      expect(yes.code, yes.stderr).to.equal(0)
      expect(await tokens()).to.equal(3)
    })

    it('after keys rotate --grace, keys list shows the key rotating and when its old token retires, in the table and --json', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const other = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const rotated = await runCliJson(['keys', 'rotate', issued.id, '--grace', '2h'], env)
      expect(rotated.state).to.equal('rotating')
      const listed = (await runCliJson(['keys', 'list', '--customer', customerId], env)).keys
      const byId = new Map(listed.map((key: {id: string}) => [key.id, key]))
      // --json says what the table says.
      expect(byId.get(issued.id)).to.include({state: 'rotating', previous_token_retires_at: rotated.previous_token_retires_at})
      expect(Date.parse(rotated.previous_token_retires_at) - Date.now()).to.be.within(7_100_000, 7_200_000)
      expect(byId.get(other.id)).to.include({state: 'active', previous_token_retires_at: null})
      const shown = await runCliAtWidth(['keys', 'list', '--customer', customerId], {...env, NO_COLOR: '1'}, 160)
      const line = (id: string) => shown.stdout.split('\n').find((candidate) => candidate.startsWith(id)) ?? ''
      expect(line(issued.id).split(/\s+/).slice(0, 2)).to.deep.equal([issued.id, 'rotating'])
      expect(line(issued.id)).to.include(rotated.previous_token_retires_at)
      expect(line(other.id).split(/\s+/).slice(0, 2)).to.deep.equal([other.id, 'active'])
      const narrow = await runCliAtWidth(['keys', 'list', '--customer', customerId], {...env, NO_COLOR: '1'}, 80)
      expect(narrow.stdout.split('\n').find((candidate) => candidate.startsWith(issued.id))).to.match(/^\S+\s+rotating\s/)
    })

    it('keys list at an 80-column terminal keeps each key id whole on its line, in colour unless NO_COLOR or --no-color', async function () {
      const issued = await runCliJson(
        ['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--name', 'a long name that the table will have to cut to fit'],
        env,
      )
      // A colour terminal, whatever this run's own (CI=true alone turns colour off): FORCE_COLOR=1, which NO_COLOR and --no-color must beat.
      const colour = {...env, FORCE_COLOR: '1'}
      const [shown, ...plains] = await Promise.all([
        runCliAtTerminal(['keys', 'list', '--customer', customerId], colour, '', 80),
        runCliAtTerminal(['keys', 'list', '--customer', customerId], {...colour, NO_COLOR: '1'}, '', 80),
        runCliAtTerminal(['keys', 'list', '--customer', customerId, '--no-color'], colour, '', 80),
      ])
      expect(shown!.code, shown!.stdout).to.equal(0)
      const line = shown!.stdout.split('\n').find((candidate) => candidate.includes(issued.id))
      expect(line, shown!.stdout).to.not.equal(undefined)
      expect(line!.replace(/\u001b\[[0-9;]*m/g, '').split(/\s+/)[0]).to.equal(issued.id)
      expect(shown!.stdout).to.match(/\u001b\[1m/)
      for (const plain of plains) {
        expect(plain.stdout).to.include(issued.id)
        expect(plain.stdout).to.not.match(/\u001b\[[0-9;]*m/)
      }
    })

    it('asks before revoking a key at a terminal, and refuses without --yes anywhere else', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const state = async () => (await runCliJson(['keys', 'list', '--customer', customerId], env)).keys[0].state
      const scripted = await runCli(['keys', 'revoke', issued.id], env)
      expect(scripted.code).to.equal(1)
      expect(scripted.stderr).to.equal('Error: refusing to go on without confirmation: not at a terminal (hint: add --yes to confirm)\n')
      const declined = await runCliAtTerminal(['keys', 'revoke', issued.id], env, 'n\n')
      expect(declined.stdout).to.include(`Revoke key ${issued.id}? Every daemon refuses it within 5 s, and it cannot be undone. [y/N]`)
      expect(declined.stdout).to.include('cancelled; nothing was changed')
      expect(declined.code).to.equal(1)
      expect(await state()).to.equal('active')
      const accepted = await runCliAtTerminal(['keys', 'revoke', issued.id], env, 'y\n')
      expect(accepted.code, accepted.stdout).to.equal(0)
      expect(accepted.stdout).to.include(`Revoked key ${issued.id}`)
      expect(await state()).to.equal('revoked')
    })

    it('stages list/add and fields list/add/remove manage the setup', async function () {
      const added = await runCliJson(['stages', 'add', '--customer', customerId, '--slug', 'showing', '--name', 'Showing', '--color', '#0ea5e9'], env)
      expect(added).to.include({slug: 'showing', position: 5})
      const stages = await runCliJson(['stages', 'list', '--customer', customerId], env)
      expect(stages.stages.map((s: {slug: string}) => s.slug)).to.deep.equal(['new', 'contacted', 'qualified', 'proposal', 'closed', 'showing'])
      expect(await runCliJson(['fields', 'add', '--customer', customerId, '--slug', 'budget', '--type', 'number'], env)).to.deep.equal({
        slug: 'budget',
        name: 'budget',
        type: 'number',
        reserved: false,
      })
      const fields = await runCliJson(['fields', 'list', '--customer', customerId], env)
      expect(fields.fields.map((f: {slug: string}) => f.slug)).to.deep.equal(['budget', 'lead_line'])
      expect((await runCli(['fields', 'remove', '--customer', customerId, '--slug', 'budget'], env)).stderr).to.include('add --yes to confirm')
      expect((await services.customers.listFields(customerId)).map((field) => field.slug)).to.include('budget')
      expect(await runCliJson(['fields', 'remove', '--customer', customerId, '--slug', 'budget', '--yes'], env)).to.deep.equal({slug: 'budget', removed: true})
    })

    it('stages add, fields add and customers create --id refuse what exists with a hint of what to do', async function () {
      const stage = await runCli(['stages', 'add', '--customer', customerId, '--slug', 'new'], env)
      expect(stage.code).to.equal(1)
      expect(stage.stderr).to.equal('Error: stage "new" already exists (hint: choose another slug; leads stages list shows the customer\'s stages)\n')
      expect(await runCliJson(['fields', 'add', '--customer', customerId, '--slug', 'twice', '--type', 'string'], env)).to.include({slug: 'twice'})
      const field = await runCli(['fields', 'add', '--customer', customerId, '--slug', 'twice', '--type', 'string', '--json'], env)
      expect(JSON.parse(field.stderr).error).to.include({code: 409, hint: "choose another slug; leads fields list shows the customer's fields"})
      const customer = await runCli(['customers', 'create', '--name', 'Again', '--id', customerId], env)
      expect(customer.stderr).to.equal(`Error: customer ${customerId} already exists (hint: leave --id out to get a new id)\n`)
    })

    it('stages add and fields add refuse an empty or blank --name, as customers create does; left out, the name is the slug', async function () {
      for (const name of ['', '   ']) {
        const stage = await runCli(['stages', 'add', '--customer', customerId, '--slug', 'showing', '--name', name], env)
        expect(stage.code, JSON.stringify(name)).to.equal(1)
        expect(stage.stderr).to.equal('Error: name must not be empty (hint: leave --name out to use the slug)\n')
        const field = await runCli(['fields', 'add', '--customer', customerId, '--slug', 'budget', '--type', 'number', '--name', name], env)
        expect(field.code, JSON.stringify(name)).to.equal(1)
        expect(field.stderr).to.equal('Error: name must not be empty (hint: leave --name out to use the slug)\n')
      }
      expect((await services.customers.listStages(customerId)).map((stage) => stage.slug)).not.to.include('showing')
      expect((await services.customers.listFields(customerId)).map((field) => field.slug)).not.to.include('budget')
      expect(await runCliJson(['stages', 'add', '--customer', customerId, '--slug', 'showing'], env)).to.include({slug: 'showing', name: 'showing'})
      expect(await runCliJson(['fields', 'add', '--customer', customerId, '--slug', 'budget', '--type', 'number'], env)).to.include({
        slug: 'budget',
        name: 'budget',
      })
    })

    it('ratelimit set/show/clear manage overrides per customer and per key', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const customerSet = await runCliJson(['ratelimit', 'set', '--customer', customerId, '--per-minute', '120', '--per-hour', '5000'], env)
      expect(customerSet.effective).to.deep.equal({per_minute: 120, per_hour: 5000, bulk_per_minute: 10})
      const keySet = await runCliJson(['ratelimit', 'set', '--key', issued.id, '--per-minute', '30'], env)
      expect(keySet.override).to.include({per_minute: 30, per_hour: null, bulk_per_minute: null})
      expect(keySet.effective).to.deep.equal({per_minute: 30, per_hour: 5000, bulk_per_minute: 10})
      const shown = await runCli(['ratelimit', 'show', '--key', issued.id], env)
      expect(shown.stdout).to.include('effective: per-minute 30, per-hour 5000, bulk-per-minute 10')
      expect(await runCliJson(['ratelimit', 'clear', '--key', issued.id], env)).to.deep.equal({scope: {type: 'key', id: issued.id}, cleared: true})
      const after = await runCliJson(['ratelimit', 'show', '--key', issued.id], env)
      expect(after.override).to.equal(null)
      expect(after.effective.per_minute).to.equal(120)
      const both = await runCli(['ratelimit', 'show', '--key', issued.id, '--customer', customerId], env)
      expect(both.code).to.equal(2)
      const zero = await runCli(['ratelimit', 'set', '--customer', customerId, '--per-minute', '0'], env)
      expect(zero.code).to.equal(2)
      for (const [flag, column] of [
        ['--per-minute', 'per_minute'],
        ['--per-hour', 'per_hour'],
        ['--bulk-per-minute', 'bulk_per_minute'],
      ] as const) {
        const huge = await runCli(['ratelimit', 'set', '--key', issued.id, flag, '1000001'], env)
        expect(huge.code, flag).to.equal(1)
        expect(huge.stderr, flag).to.equal(
          `Error: ${flag} must be an integer from 1 to 1000000 (hint: a key that must never be limited is issued with --internal instead)\n`,
        )
        expect(await db('rate_limit_overrides').where({scope_type: 'key', scope_id: issued.id}).whereNotNull(column).count({n: '*'})).to.deep.equal([{n: 0}])
      }
    })

    it('ratelimit set refuses a key override for an internal key, which no limit applies to, and show says the key is exempt', async function () {
      const internal = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--internal'], env)
      const refused = await runCli(['ratelimit', 'set', '--key', internal.id, '--per-minute', '1'], env)
      expect(refused.code).to.equal(1)
      expect(refused.stdout).to.equal('')
      expect(refused.stderr).to.equal(
        `Error: key ${internal.id} is internal: it is exempt from every rate limit, so an override would not apply (hint: to throttle it, issue the customer a key without --internal and revoke this one)\n`,
      )
      expect(await db('rate_limit_overrides').where({scope_type: 'key', scope_id: internal.id}).count({n: '*'})).to.deep.equal([{n: 0}])
      const shown = await runCli(['ratelimit', 'show', '--key', internal.id], env)
      expect(shown.code, shown.stderr).to.equal(0)
      expect(shown.stdout).to.include('  effective: none: an internal key is exempt from every rate limit\n')
      const json = await runCliJson(['ratelimit', 'show', '--key', internal.id], env)
      expect(json).to.include({exempt: true})
      const ordinary = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      expect(await runCliJson(['ratelimit', 'show', '--key', ordinary.id], env)).to.include({exempt: false})
      expect(await runCliJson(['ratelimit', 'show', '--customer', customerId], env)).to.include({exempt: false})
    })

    it("ratelimit show --customer answers while Redis is down: a customer's override and limits are in the database", async function () {
      await runCliJson(['ratelimit', 'set', '--customer', customerId, '--per-minute', '120'], env)
      const shown = await runCli(['ratelimit', 'show', '--customer', customerId], {...env, LEADS_REDIS_URL: 'redis://127.0.0.1:1/0'})
      expect(shown.code, shown.stderr).to.equal(0)
      expect(shown.stdout).to.include('effective: per-minute 120, per-hour 1000, bulk-per-minute 10')
    })

    it('ratelimit list shows which customers and keys have overrides, of all customers or of one', async function () {
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const otherCustomer = (await services.customers.create({name: 'Other override'})).id
      const untouched = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      await runCliJson(['ratelimit', 'set', '--customer', customerId, '--per-minute', '120'], env)
      await runCliJson(['ratelimit', 'set', '--key', issued.id, '--bulk-per-minute', '30'], env)
      await runCliJson(['ratelimit', 'set', '--customer', otherCustomer, '--per-hour', '9000'], env)
      const mine = (await runCliJson(['ratelimit', 'list', '--customer', customerId], env)).overrides
      expect(mine.map((row: {scope: unknown}) => row.scope)).to.deep.equal([
        {type: 'customer', id: customerId},
        {type: 'key', id: issued.id},
      ])
      expect(mine[0]).to.include({customer_id: customerId, per_minute: 120, per_hour: null, bulk_per_minute: null})
      expect(mine[1]).to.include({customer_id: customerId, per_minute: null, bulk_per_minute: 30})
      const every = (await runCliJson(['ratelimit', 'list'], env)).overrides.map((row: {scope: {id: string}}) => row.scope.id)
      expect(every).to.include.members([customerId, issued.id, otherCustomer])
      expect(every).to.not.include(untouched.id)
      const piped = await runCli(['ratelimit', 'list', '--customer', customerId, '--columns', 'scope,id,per-minute,bulk-per-minute'], env)
      expect(piped.stdout).to.equal(`customer\t${customerId}\t120\tinherited\nkey\t${issued.id}\tinherited\t30\n`)
      const none = await runCli(['ratelimit', 'list', '--customer', otherCustomer, '--columns', 'id'], env)
      expect(none.stdout).to.equal(`${otherCustomer}\n`)
    })

    it('takes a customer or key id in capitals as the same id, as the API takes x-customer-id: lists, adds and overrides reach it', async function () {
      const upper = customerId.toUpperCase()
      const issued = await runCliJson(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read'], env)
      const listed = await runCliJson(['keys', 'list', '--customer', upper], env)
      expect(listed.keys.map((key: {id: string}) => key.id)).to.deep.equal([issued.id])
      const stage = await runCli(['stages', 'add', '--customer', upper, '--slug', 'showing'], env)
      expect(stage.code, stage.stderr).to.equal(0)
      expect((await runCliJson(['stages', 'list', '--customer', upper], env)).stages.map((s: {slug: string}) => s.slug)).to.include('showing')
      const field = await runCli(['fields', 'add', '--customer', upper, '--slug', 'budget', '--type', 'number'], env)
      expect(field.code, field.stderr).to.equal(0)
      expect((await runCliJson(['fields', 'list', '--customer', customerId], env)).fields.map((f: {slug: string}) => f.slug)).to.include('budget')
      await runCliJson(['ratelimit', 'set', '--customer', upper, '--per-minute', '7'], env)
      await runCliJson(['ratelimit', 'set', '--key', issued.id.toUpperCase(), '--per-hour', '9'], env)
      const shown = await runCliJson(['ratelimit', 'show', '--key', issued.id], env)
      expect(shown.scope).to.deep.equal({type: 'key', id: issued.id})
      expect(shown.effective).to.deep.equal({per_minute: 7, per_hour: 9, bulk_per_minute: 10})
      expect((await runCliJson(['ratelimit', 'list', '--customer', upper], env)).overrides).to.have.length(2)
    })

    it('exits 1 with one line and a hint on a user error, and prints nothing on stdout', async function () {
      const result = await runCli(['stages', 'list', '--customer', '6f1c0000-0000-4000-8000-000000000000'], env)
      expect(result.code).to.equal(1)
      expect(result.stdout).to.equal('')
      expect(result.stderr).to.equal('Error: customer 6f1c0000-0000-4000-8000-000000000000 does not exist (hint: run `leads customers list`)\n')
    })

    it('with --json, prints every failure as the error envelope on stderr with its exit code, usage errors too', async function () {
      const user = await runCli(['stages', 'list', '--customer', '6f1c0000-0000-4000-8000-000000000000', '--json'], env)
      expect(user.code).to.equal(1)
      expect(user.stdout).to.equal('')
      expect(JSON.parse(user.stderr)).to.deep.equal({
        error: {
          type: 'not_found_error',
          code: 404,
          message: 'customer 6f1c0000-0000-4000-8000-000000000000 does not exist',
          hint: 'run `leads customers list`',
        },
        exit_code: 1,
      })
      const invalid = await runCli(['stages', 'add', '--customer', customerId, '--slug', 'x', '--name', 'n'.repeat(300), '--json'], env)
      expect(JSON.parse(invalid.stderr).error).to.deep.include({type: 'invalid_request_error', code: 400, param: 'name'})
      const usage = await runCli(['keys', 'issue', '--json'], env)
      expect(usage.code).to.equal(2)
      expect(JSON.parse(usage.stderr)).to.deep.equal({
        error: {
          type: 'invalid_request_error',
          code: 400,
          message: 'The following errors occurred: Missing required flag customer Missing required flag scope',
          hint: 'see --help',
        },
        exit_code: 2,
      })
      const unknown = await runCliProcess(['keys', 'list', 'extra', '--json'], env)
      expect(unknown.code).to.equal(2)
      expect(JSON.parse(unknown.stderr)).to.deep.equal({
        error: {type: 'invalid_request_error', code: 400, message: 'Unexpected argument: extra', hint: 'keys list takes none; see leads keys list --help'},
        exit_code: 2,
      })
    })

    it('refuses values past what the columns hold before writing anything, in one line without SQL', async function () {
      const expiry = await runCli(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--expires-in', '999999999999999999d'], env)
      expect(expiry.code).to.equal(1)
      expect(expiry.stderr).to.match(/^Error: expires-in must be a duration like 30s.*\n$/)
      const tooLong = await runCli(['keys', 'issue', '--customer', customerId, '--scope', 'public_api:leads:read', '--expires-in', '3651d'], env)
      expect(tooLong.stderr).to.equal('Error: expires-in must be at most 3650d (ten years), got "3651d"\n')
      expect(await services.keys.list(customerId)).to.have.length(0)

      const longName = await runCli(['stages', 'add', '--customer', customerId, '--slug', 'long', '--name', 'n'.repeat(300)], env)
      expect(longName.code).to.equal(1)
      expect(longName.stderr).to.equal('Error: name must be at most 200 characters, got 300\n')
      const controlName = await runCli(['fields', 'add', '--customer', customerId, '--slug', 'bell', '--type', 'string', '--name', 'a\u0007b'], env)
      expect(controlName.stderr).to.equal('Error: name contains a control character\n')
      expect((await services.customers.listStages(customerId)).map((stage) => stage.slug)).to.not.include('long')
      expect((await services.customers.listFields(customerId)).map((field) => field.slug)).to.not.include('bell')
    })
  })

  it('exits 2 on a usage error', async function () {
    const result = await runCli(['keys', 'issue', '--customer', 'x'], {LEADS_DATABASE_URL: 'sqlite::memory:'})
    expect(result.code).to.equal(2)
    expect(result.stderr).to.include('Missing required flag scope')
  })

  it('names a bad LEADS_LOG_LEVEL and the levels it can be', async function () {
    const result = await runCli(['customers', 'list'], {LEADS_DATABASE_URL: 'sqlite::memory:', LEADS_LOG_LEVEL: 'verbose'})
    expect(result.code).to.equal(1)
    expect(result.stderr).to.match(/^Error: LEADS_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose" \(hint: .*\)\n$/)
  })

  it('stops with one line naming the variable on bad configuration', async function () {
    const result = await runCli(['customers', 'list'], {LEADS_DATABASE_URL: 'mysql://root@127.0.0.1:3306/leads'})
    expect(result.code).to.equal(1)
    expect(result.stderr.trim().split('\n')).to.have.length(1)
    expect(result.stderr).to.match(/^Error: LEADS_MASTER_KEY is required/)
  })

  it('follows the conventions: help and version commands, -h and -v, the environment in the root help, "did you mean"', async function () {
    // The real executable, end to end: its manifest, plugins and help class.
    const root = await runCliProcess(['--help'], {})
    expect(root.code).to.equal(0)
    expect(root.stdout).to.match(/ENVIRONMENT\n {2}LEADS_DATABASE_URL +database: /)
    for (const variable of ['LEADS_REDIS_URL', 'LEADS_MASTER_KEY', 'LEADS_BASE_URL', 'LEADS_API_TOKEN', 'LEADS_CUSTOMER_ID', 'LEADS_PROFILE', 'NO_COLOR'])
      expect(root.stdout).to.include(variable)
    // Read by the client commands' profiles (oclif's config directory), not by the daemon's configuration.
    expect(root.stdout).to.match(/\n {2}LEADS_CONFIG_DIR +directory of the client profiles/)
    const topic = await runCli(['help', 'keys'], {})
    expect(topic.stdout).to.match(/^Issue, list, rotate and revoke customer API keys\n/)
    expect(topic.stdout).to.include('keys revoke')
    expect((await runCli(['keys', 'list', '-h'], {})).stdout).to.include('--no-truncate')
    const version = await runCli(['version'], {})
    expect(version.stdout).to.match(/^leads-service\/\d+\.\d+\.\d+ /)
    expect((await runCliProcess(['-v'], {})).stdout).to.equal(version.stdout)
    const completion = await runCli(['autocomplete', 'bash'], {})
    expect(completion.stdout).to.include('leads autocomplete')
    const typo = await runCliAtTerminal(['kyes', 'list'], {})
    expect(typo.stdout.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')).to.include('Did you mean keys list?')
    expect(typo.code).to.equal(2)
  })

  it('answers an unknown command, at a terminal or not, with exit 2 and the nearest command, and extra words as unexpected arguments', async function () {
    const flat = (text: string) =>
      text
        .replace(/\s*›\s*/g, ' ')
        .replace(/\s+/g, ' ')
        .trim()
    const typo = await runCli(['kyes', 'list'], {})
    expect(typo.code).to.equal(2)
    expect(flat(typo.stderr)).to.equal('Error: kyes list is not a leads command. Did you mean keys list? (leads help lists the commands)')
    const inTopic = await runCli(['keys', 'lst'], {})
    expect(inTopic.code).to.equal(2)
    expect(flat(inTopic.stderr)).to.equal('Error: keys lst is not a leads command. Did you mean keys list? (leads help keys lists the commands)')
    const topic = await runCli(['kyes'], {})
    expect(flat(topic.stderr)).to.equal('Error: kyes is not a leads command. Did you mean keys? (leads help lists the commands)')
    const far = await runCli(['frobnicate'], {})
    expect(far.code).to.equal(2)
    expect(flat(far.stderr)).to.equal('Error: frobnicate is not a leads command. (leads help lists the commands)')
    const extra = await runCli(['keys', 'list', 'extra-arg'], {})
    expect(extra.code).to.equal(2)
    expect(flat(extra.stderr)).to.equal('Error: Unexpected argument: extra-arg (keys list takes none; see leads keys list --help)')
  })

  it('answers a mistyped flag with exit 2 and the nearest flag, as README says of typos, not the whole help', async function () {
    const flat = (text: string) =>
      text
        .replace(/\s*›\s*/g, ' ')
        .replace(/\s+/g, ' ')
        .trim()
    const typo = await runCli(['keys', 'list', '--custmer', 'x'], {})
    expect(typo.code).to.equal(2)
    expect(typo.stdout).to.equal('')
    expect(flat(typo.stderr)).to.equal('Error: Nonexistent flag: --custmer. Did you mean --customer? (see leads keys list --help)')
    const far = await runCli(['keys', 'list', '--frobnicate'], {})
    expect(far.code).to.equal(2)
    expect(flat(far.stderr)).to.equal('Error: Nonexistent flag: --frobnicate (see leads keys list --help)')
    const json = await runCli(['keys', 'list', '--custmer', 'x', '--json'], {})
    expect(json.code).to.equal(2)
    expect(JSON.parse(json.stderr)).to.deep.equal({
      error: {type: 'invalid_request_error', code: 400, message: 'Nonexistent flag: --custmer. Did you mean --customer?', hint: 'see leads keys list --help'},
      exit_code: 2,
    })
  })

  it('names LEADS_DATABASE_URL when the database cannot be reached, without its password', async function () {
    // A process of its own: nothing but the one line may reach its console.
    const result = await runCliProcess(['customers', 'list'], {
      LEADS_DATABASE_URL: 'mysql://root:hunter2@127.0.0.1:1/leads',
      LEADS_MASTER_KEY: 'ab'.repeat(32),
    })
    expect(result.code).to.equal(1)
    expect(result.stderr).to.match(/^Error: LEADS_DATABASE_URL cannot be reached: nothing listens on 127.0.0.1:1 /)
    expect(result.stderr).not.to.include('hunter2')
    // One line, and no driver stack on either stream before it.
    expect(result.stderr.trim().split('\n')).to.have.length(1)
    expect(result.stdout).to.equal('')
  })
})
