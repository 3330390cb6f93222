import {expect} from 'chai'

import {withoutSecrets} from '../../../src/shared/secret-text.js'

describe('withoutSecrets', function () {
  const token = `svc_${'0123456789abcdef'.repeat(4)}`
  const secret = `svc_whsec_${'fedcba9876543210'.repeat(4)}`

  it('cuts tokens and signing secrets to their kind and last four characters, wherever they are', function () {
    expect(withoutSecrets(`key must be a UUID, got "${token}"`)).to.equal('key must be a UUID, got "svc_…cdef"')
    expect(withoutSecrets(`webhook ${secret} does not exist; nor ${token.toUpperCase().replace('SVC_', 'svc_')}`)).to.equal(
      'webhook svc_whsec_…3210 does not exist; nor svc_…CDEF',
    )
  })

  it('cuts a good part of one too, and leaves text without one as it is', function () {
    expect(withoutSecrets(`got "${token.slice(0, 40)}"`)).to.equal(`got "svc_…${token.slice(36, 40)}"`)
    for (const text of ['svc_…fb25', 'svc_abc', 'customer must be a UUID, got "acme"']) expect(withoutSecrets(text)).to.equal(text)
  })
})
