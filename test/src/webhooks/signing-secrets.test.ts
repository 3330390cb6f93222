import {randomBytes} from 'node:crypto'

import {expect} from 'chai'

import {SecretBox} from '../../../src/webhooks/secret-box.js'
import {SECRET_OVERLAP_MS, signingSecrets} from '../../../src/webhooks/signing-secrets.js'

const ROTATED_AT = Date.UTC(2026, 10, 22, 12)
const OLD = `svc_whsec_${'1'.repeat(64)}`
const NEW = `svc_whsec_${'2'.repeat(64)}`

describe('signing secrets', function () {
  const box = new SecretBox(randomBytes(32))
  const rotated = {secretCiphertext: box.seal(NEW), previousSecretCiphertext: box.seal(OLD), secretRotatedAt: ROTATED_AT}

  it('is the current secret alone for a webhook never rotated', function () {
    expect(signingSecrets({secretCiphertext: box.seal(OLD), previousSecretCiphertext: null, secretRotatedAt: null}, box, ROTATED_AT)).to.deep.equal({
      current: OLD,
      previous: null,
    })
  })

  it('adds the previous secret from the rotation until SECRET_OVERLAP_MS (24 h) after it, and not from then on', function () {
    expect(SECRET_OVERLAP_MS).to.equal(24 * 60 * 60 * 1000)
    expect(signingSecrets(rotated, box, ROTATED_AT)).to.deep.equal({current: NEW, previous: OLD})
    expect(signingSecrets(rotated, box, ROTATED_AT + SECRET_OVERLAP_MS - 1)).to.deep.equal({current: NEW, previous: OLD})
    expect(signingSecrets(rotated, box, ROTATED_AT + SECRET_OVERLAP_MS)).to.deep.equal({current: NEW, previous: null})
  })

  it('leaves out a previous secret sealed under another master key, and still opens the current one', function () {
    const lostKey = new SecretBox(randomBytes(32))
    expect(signingSecrets({...rotated, previousSecretCiphertext: lostKey.seal(OLD)}, box, ROTATED_AT)).to.deep.equal({current: NEW, previous: null})
    expect(() => signingSecrets({...rotated, secretCiphertext: lostKey.seal(NEW)}, box, ROTATED_AT)).to.throw()
  })
})
