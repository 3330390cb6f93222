import {expect} from 'chai'

import {KeyAuthenticator} from '../../../src/keys/key-authenticator.js'
import {KeysStore} from '../../../src/keys/keys-store.js'
import {hashToken, isWellFormedToken, mintToken} from '../../../src/keys/tokens.js'
import type {Db} from '../../../src/db/knex.js'
import type {Services} from '../../../src/services.js'
import {NotFoundError, ValidationError} from '../../../src/shared/errors.js'
import {forEachBackend} from '../../helpers/backends.js'
import {newTenant, openServices, rejectsWith} from '../../helpers/fixtures.js'
import {ManualClock} from '../../helpers/manual-clock.js'
import {openTestDb} from '../../helpers/test-db.js'

describe('tokens', function () {
  it('mints svc_ and 64 lower-case hex characters, different every time', function () {
    const tokens = new Set(Array.from({length: 50}, () => mintToken()))
    expect(tokens.size).to.equal(50)
    for (const token of tokens) expect(token).to.match(/^svc_[0-9a-f]{64}$/)
  })

  it('hashes with SHA-256 and recognises well-formed tokens only', function () {
    expect(hashToken('svc_x')).to.match(/^[0-9a-f]{64}$/)
    expect(isWellFormedToken(mintToken())).to.equal(true)
    expect(isWellFormedToken('svc_' + 'A'.repeat(64))).to.equal(false)
    expect(isWellFormedToken('svc_abc')).to.equal(false)
  })
})

describe('keys', function () {
  forEachBackend((backend) => {
    let db: Db
    let services: Services
    const clock = new ManualClock()

    before(async function () {
      db = openTestDb(backend)
      services = await openServices(backend, {db, clock})
    })
    after(async function () {
      await services.close()
      await db.destroy()
    })

    function authenticator(): KeyAuthenticator {
      return new KeyAuthenticator(new KeysStore(db), {clock, cacheTtlMs: 2000})
    }

    it('stores only the hash of an issued token', async function () {
      const {token, key, customer} = await newTenant(services)
      // api_tokens has no customer_id: reached through the customer's key (the sharding check).
      const rows = (await db('api_tokens')
        .join('api_keys', 'api_keys.id', 'api_tokens.key_id')
        .where({'api_keys.customer_id': customer.id, 'api_tokens.key_id': key.id})
        .select('api_tokens.*')) as Array<Record<string, unknown>>
      expect(rows).to.have.length(1)
      expect(rows[0]?.['token_hash']).to.equal(hashToken(token))
      expect(JSON.stringify(await db('api_keys').where({customer_id: customer.id, id: key.id}))).not.to.include(token)
    })

    it('validates scopes, customer and expiry', async function () {
      const {customer} = await newTenant(services)
      await rejectsWith(services.keys.issue({customerId: customer.id, scopes: []}), ValidationError)
      await rejectsWith(services.keys.issue({customerId: customer.id, scopes: ['leads:all']}), ValidationError)
      await rejectsWith(services.keys.issue({customerId: '2b1c3a4e-0000-4000-8000-000000000000', scopes: ['public_api:leads:read']}), NotFoundError)
      const {key} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read'], expiresInMs: 60_000})
      expect(key.expiresAt).to.equal(clock.now() + 60_000)
    })

    it('authenticates an active key and refuses malformed and unknown tokens', async function () {
      const {token, key} = await newTenant(services)
      const auth = authenticator()
      expect((await auth.authenticate(token))?.id).to.equal(key.id)
      expect(await auth.authenticate('svc_nothex')).to.equal(null)
      expect(await auth.authenticate(mintToken())).to.equal(null)
    })

    it('refuses a revoked key once the cache TTL has passed, well within 5 s', async function () {
      const {token, key} = await newTenant(services)
      const auth = authenticator()
      expect(await auth.authenticate(token)).not.to.equal(null)
      await services.keys.revoke(key.id)
      clock.advance(2000)
      expect(await auth.authenticate(token)).to.equal(null)
      expect((await services.keys.get(key.id)).revokedAt).to.be.a('number')
    })

    it("tells an internal key's token from any other with one read of the hashes per 5 s, whatever the number of tokens asked", async function () {
      const store = new KeysStore(db)
      let reads = 0
      const read = store.internalTokenHashes.bind(store)
      store.internalTokenHashes = () => (reads++, read())
      const auth = new KeyAuthenticator(store, {clock, internalTokensTtlMs: 5000})
      const {customer, token} = await newTenant(services)
      const internal = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read'], internal: true})

      const answers = await Promise.all([internal.token, token, mintToken(), 'svc_nothex'].map((each) => auth.isInternalToken(each)))
      expect(answers).to.deep.equal([true, false, false, false])
      for (let i = 0; i < 100; i++) expect(await auth.isInternalToken(mintToken())).to.equal(false)
      expect(reads).to.equal(1)

      // A new internal key is known at the next read; a revoked one is no longer listed.
      const later = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read'], internal: true})
      await services.keys.revoke(internal.key.id)
      expect(await auth.isInternalToken(later.token)).to.equal(false)
      clock.advance(5000)
      expect(await auth.isInternalToken(later.token)).to.equal(true)
      expect(await auth.isInternalToken(internal.token)).to.equal(false)
      expect(reads).to.equal(2)
    })

    it('refuses an expired key', async function () {
      const {customer} = await newTenant(services)
      const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:read'], expiresInMs: 1000})
      const auth = authenticator()
      expect(await auth.authenticate(token)).not.to.equal(null)
      clock.advance(1000)
      expect(await auth.authenticate(token)).to.equal(null)
    })

    it('rotates: same key id, new token works, old one stops now or after the grace period', async function () {
      const {token: first, key} = await newTenant(services)
      const auth = authenticator()
      const immediate = await services.keys.rotate(key.id)
      expect(immediate.key.id).to.equal(key.id)
      clock.advance(2000)
      expect(await auth.authenticate(first)).to.equal(null)
      expect((await auth.authenticate(immediate.token))?.id).to.equal(key.id)

      const graceful = await services.keys.rotate(key.id, 60_000)
      clock.advance(2000)
      expect((await auth.authenticate(immediate.token))?.id).to.equal(key.id)
      expect((await auth.authenticate(graceful.token))?.id).to.equal(key.id)
      clock.advance(60_000)
      expect(await auth.authenticate(immediate.token)).to.equal(null)
      expect((await auth.authenticate(graceful.token))?.id).to.equal(key.id)
    })

    it('refuses to rotate a revoked key', async function () {
      const {key} = await newTenant(services)
      await services.keys.revoke(key.id)
      await rejectsWith(services.keys.rotate(key.id), ValidationError)
    })

    it('records last use in memory and writes it only on flush', async function () {
      const {token, key} = await newTenant(services)
      const auth = authenticator()
      await auth.authenticate(token)
      clock.advance(500)
      await auth.authenticate(token)
      expect((await services.keys.get(key.id)).lastUsedAt).to.equal(null)
      await auth.flushLastUsed()
      expect((await services.keys.get(key.id)).lastUsedAt).to.equal(clock.now())
    })

    it('lists keys per customer', async function () {
      const a = await newTenant(services)
      clock.advance(1)
      await services.keys.issue({customerId: a.customer.id, scopes: ['public_api:webhooks:manage'], name: 'hooks'})
      const keys = await services.keys.list(a.customer.id)
      expect(keys.map((k) => k.name)).to.deep.equal([null, 'hooks'])
      expect(keys.every((k) => k.customerId === a.customer.id)).to.equal(true)
    })
  })
})
