import {expect} from 'chai'

import {ConfigError} from '../../../src/shared/errors.js'
import {TrustedProxies} from '../../../src/shared/trusted-proxies.js'

describe('TrustedProxies', function () {
  const proxies = TrustedProxies.parse('10.0.0.0/8, 127.0.0.1,fd00::/8')

  it('takes the socket peer when it is not a trusted proxy, whatever X-Forwarded-For says', function () {
    expect(proxies.clientAddress('203.0.113.9', '198.51.100.1')).to.equal('203.0.113.9')
    expect(proxies.clientAddress('::ffff:203.0.113.9', '198.51.100.1')).to.equal('203.0.113.9')
  })

  it('behind trusted proxies, takes the rightmost hop that is not one', function () {
    expect(proxies.clientAddress('127.0.0.1', '198.51.100.1')).to.equal('198.51.100.1')
    expect(proxies.clientAddress('::ffff:127.0.0.1', '198.51.100.1, 10.1.2.3')).to.equal('198.51.100.1')
    expect(proxies.clientAddress('fd00::1', '198.51.100.1,10.1.2.3')).to.equal('198.51.100.1')
    // What the client wrote itself sits to the left of the hop its proxy appended: never reached.
    expect(proxies.clientAddress('127.0.0.1', '1.1.1.1, 198.51.100.1')).to.equal('198.51.100.1')
    expect(proxies.clientAddress('127.0.0.1', ['1.1.1.1', '198.51.100.1, 10.0.0.7'])).to.equal('198.51.100.1')
  })

  it('stops at a hop that is not an address, on the trusted hop that passed it on', function () {
    expect(proxies.clientAddress('127.0.0.1', 'unknown')).to.equal('127.0.0.1')
    expect(proxies.clientAddress('127.0.0.1', 'garbage, 10.0.0.5')).to.equal('10.0.0.5')
    expect(proxies.clientAddress('127.0.0.1', '')).to.equal('127.0.0.1')
  })

  it('takes the leftmost hop when every hop is trusted, and the peer without the header', function () {
    expect(proxies.clientAddress('127.0.0.1', '10.0.0.9, 10.0.0.5')).to.equal('10.0.0.9')
    expect(proxies.clientAddress('127.0.0.1', undefined)).to.equal('127.0.0.1')
  })

  it('believes no header when none is configured', function () {
    expect(TrustedProxies.parse(undefined).clientAddress('127.0.0.1', '198.51.100.1')).to.equal('127.0.0.1')
  })

  it('refuses an entry that is neither an address nor a CIDR, naming it', function () {
    for (const bad of ['10.0.0.0/33', 'localhost', '10.0.0.0/8/1', '::1/129', '10.0.0.0/x']) {
      expect(() => TrustedProxies.parse(`127.0.0.1,${bad}`), bad).to.throw(ConfigError, bad)
    }
  })
})
