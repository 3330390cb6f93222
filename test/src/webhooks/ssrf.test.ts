import http from 'node:http'
import type {AddressInfo} from 'node:net'
import type {LookupAddress} from 'node:dns'

import {expect} from 'chai'
import nock from 'nock'

import {ValidationError} from '../../../src/shared/errors.js'
import {
  checkLiteralTarget,
  checkWebhookUrl,
  guardedLookup,
  isAllowedHost,
  isPublicAddress,
  parseWebhookUrl,
  SsrfBlockedError,
  type LookupFn,
  type TargetPolicy,
} from '../../../src/webhooks/ssrf.js'

type Answers = Awaited<ReturnType<LookupFn>>

/** A lookup that answers every name with the same addresses and counts its calls. */
function fixedLookup(...addresses: string[]): LookupFn & {calls: string[]} {
  const calls: string[] = []
  return Object.assign(
    async (hostname: string): Promise<Answers> => {
      calls.push(hostname)
      return addresses.map((address) => ({address, family: address.includes(':') ? 6 : 4}))
    },
    {calls},
  )
}

function policy(lookup: LookupFn, allowHosts: string[] = []): TargetPolicy {
  return {allowHosts, lookup}
}

function notFound(): LookupFn {
  return async (hostname) => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {code: 'ENOTFOUND'})
  }
}

async function rejection(promise: Promise<unknown>): Promise<ValidationError> {
  try {
    await promise
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationError)
    expect((error as ValidationError).param).to.equal('url')
    return error as ValidationError
  }
  throw new Error('expected a ValidationError')
}

function parseError(raw: string): ValidationError {
  try {
    parseWebhookUrl(raw)
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationError)
    expect((error as ValidationError).param).to.equal('url')
    return error as ValidationError
  }
  throw new Error('expected parseWebhookUrl to throw')
}

/** Calls a LookupFunction the way net does and settles with what it handed the socket. */
function runLookup(
  lookup: ReturnType<typeof guardedLookup>,
  hostname: string,
  options: {all?: boolean; family?: number},
): Promise<{address: string | LookupAddress[]; family: number | undefined}> {
  return new Promise((resolve, reject) => {
    lookup(hostname, options, (error, address, family) => (error ? reject(error) : resolve({address, family})))
  })
}

async function lookupError(promise: Promise<unknown>): Promise<SsrfBlockedError> {
  try {
    await promise
  } catch (error) {
    expect(error).to.be.instanceOf(SsrfBlockedError)
    return error as SsrfBlockedError
  }
  throw new Error('expected an SsrfBlockedError')
}

describe('webhook SSRF defence', function () {
  describe('isPublicAddress', function () {
    it('accepts public IPv4 and IPv6 addresses, bracketed or not', function () {
      expect(isPublicAddress('8.8.8.8')).to.equal(true)
      expect(isPublicAddress('2606:4700:4700::1111')).to.equal(true)
      expect(isPublicAddress('[2606:4700:4700::1111]')).to.equal(true)
    })

    it('rejects loopback, IPv4-mapped loopback and IPv4-compatible addresses', function () {
      expect(isPublicAddress('127.0.0.1')).to.equal(false)
      expect(isPublicAddress('[::1]')).to.equal(false)
      expect(isPublicAddress('::ffff:127.0.0.1')).to.equal(false)
      expect(isPublicAddress('::7f00:1')).to.equal(false)
      expect(isPublicAddress('::808:808')).to.equal(false)
    })

    it('rejects anything that does not parse as an address', function () {
      expect(isPublicAddress('example.com')).to.equal(false)
      expect(isPublicAddress('')).to.equal(false)
      expect(isPublicAddress('[]')).to.equal(false)
    })
  })

  describe('parseWebhookUrl', function () {
    it('accepts a normal https URL', function () {
      expect(parseWebhookUrl('https://hooks.example.com/leads?x=1').href).to.equal('https://hooks.example.com/leads?x=1')
    })

    it('rejects http://', function () {
      expect(parseError('http://hooks.example.com/').message).to.equal('webhook url must use https, got http:')
    })

    it('rejects ftp://', function () {
      expect(parseError('ftp://hooks.example.com/').message).to.equal('webhook url must use https, got ftp:')
    })

    it('rejects credentials in the URL', function () {
      expect(parseError('https://user:pw@example.com/').message).to.equal('webhook url must not contain credentials')
      expect(parseError('https://user@example.com/').message).to.equal('webhook url must not contain credentials')
    })

    it('rejects text that is not a URL', function () {
      expect(parseError('not a url').message).to.equal('webhook url must be an absolute https:// URL')
    })

    it('rejects a URL longer than 2048 characters', function () {
      const prefix = 'https://example.com/'
      expect(parseWebhookUrl(prefix + 'a'.repeat(2048 - prefix.length)).hostname).to.equal('example.com')
      expect(parseError(prefix + 'a'.repeat(2049 - prefix.length)).message).to.equal('webhook url must be at most 2048 characters')
    })
  })

  describe('checkWebhookUrl', function () {
    const blockedLiterals: Array<[string, string]> = [
      ['https://0.0.0.0/', '0.0.0.0 is an unspecified address'],
      ['https://127.1/', '127.0.0.1 is a loopback address'],
      ['https://2130706433/', '127.0.0.1 is a loopback address'],
      ['https://0x7f.1/', '127.0.0.1 is a loopback address'],
      ['https://0177.0.0.1/', '127.0.0.1 is a loopback address'],
      ['https://[::1]/', '::1 is a loopback address'],
      ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1 is a loopback address'],
      ['https://[::ffff:7f00:1]/', '::ffff:7f00:1 is a loopback address'],
      ['https://[::127.0.0.1]/', '::7f00:1 is an IPv4-compatible address'],
      ['https://169.254.169.254/', '169.254.169.254 is a link-local address'],
      ['https://[fd00:ec2::254]/', 'fd00:ec2::254 is a unique-local address'],
      ['https://100.64.0.1/', '100.64.0.1 is a carrier-grade NAT address'],
      ['https://10.1.2.3/', '10.1.2.3 is a private address'],
      ['https://172.16.0.1/', '172.16.0.1 is a private address'],
      ['https://172.31.255.255/', '172.31.255.255 is a private address'],
      ['https://192.168.1.1/', '192.168.1.1 is a private address'],
      ['https://[fc00::1]/', 'fc00::1 is a unique-local address'],
      ['https://[fe80::1]/', 'fe80::1 is a link-local address'],
      ['https://224.0.0.1/', '224.0.0.1 is a multicast address'],
      ['https://[64:ff9b::7f00:1]/', '64:ff9b::7f00:1 is a NAT64 address'],
    ]
    for (const [raw, reason] of blockedLiterals) {
      it(`rejects the literal ${raw} without asking DNS`, async function () {
        const lookup = fixedLookup('8.8.8.8')
        const error = await rejection(checkWebhookUrl(raw, policy(lookup)))
        expect(error.message).to.equal(`webhook url must be public HTTPS: ${reason}`)
        expect(lookup.calls).to.deep.equal([])
      })
    }

    for (const raw of ['https://8.8.8.8/', 'https://[2606:4700:4700::1111]/', 'https://172.32.0.1/']) {
      it(`accepts the public literal ${raw} without asking DNS`, async function () {
        const lookup = fixedLookup('127.0.0.1')
        expect((await checkWebhookUrl(raw, policy(lookup))).href).to.equal(raw)
        expect(lookup.calls).to.deep.equal([])
      })
    }

    it('rejects a hostname that resolves to a private address', async function () {
      const error = await rejection(checkWebhookUrl('https://internal.example.com/', policy(fixedLookup('10.0.0.5'))))
      expect(error.message).to.equal('webhook url must be public HTTPS: internal.example.com resolves to 10.0.0.5, a private address')
    })

    it('rejects a hostname whose answers mix public and private addresses', async function () {
      const lookup = fixedLookup('93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', 'fd00::5')
      const error = await rejection(checkWebhookUrl('https://mixed.example.com/', policy(lookup)))
      expect(error.message).to.equal('webhook url must be public HTTPS: mixed.example.com resolves to fd00::5, a unique-local address')
    })

    it('accepts a hostname that resolves to public addresses only', async function () {
      const lookup = fixedLookup('93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c')
      const url = await checkWebhookUrl('https://hooks.example.com/in', policy(lookup))
      expect(url.href).to.equal('https://hooks.example.com/in')
      expect(lookup.calls).to.deep.equal(['hooks.example.com'])
    })

    it('rejects a hostname that cannot be resolved and says so', async function () {
      const error = await rejection(checkWebhookUrl('https://nowhere.invalid/', policy(notFound())))
      expect(error.message).to.equal('webhook url must be public HTTPS: nowhere.invalid cannot be resolved (ENOTFOUND)')
    })

    it('rejects a hostname whose lookup returns no addresses', async function () {
      const error = await rejection(checkWebhookUrl('https://empty.example.com/', policy(fixedLookup())))
      expect(error.message).to.equal('webhook url must be public HTTPS: empty.example.com cannot be resolved')
    })

    it('lets an allow-listed host through even though it resolves to loopback', async function () {
      const lookup = fixedLookup('127.0.0.1')
      const url = await checkWebhookUrl('https://localhost:8443/hook', policy(lookup, ['localhost']))
      expect(url.href).to.equal('https://localhost:8443/hook')
    })

    it('does not let a host:port entry allow another port', async function () {
      const error = await rejection(checkWebhookUrl('https://localhost:8443/', policy(fixedLookup('127.0.0.1'), ['localhost:9999'])))
      expect(error.message).to.equal('webhook url must be public HTTPS: localhost resolves to 127.0.0.1, a loopback address')
    })

    it('still requires HTTPS for an allow-listed host', async function () {
      const error = await rejection(checkWebhookUrl('http://localhost:8443/', policy(fixedLookup('127.0.0.1'), ['localhost'])))
      expect(error.message).to.equal('webhook url must use https, got http:')
    })
  })

  describe('isAllowedHost', function () {
    it('matches a bare host entry on any port, case-insensitively', function () {
      expect(isAllowedHost(new URL('https://LocalHost:8443/'), ['localhost'])).to.equal(true)
      expect(isAllowedHost(new URL('https://localhost/'), ['LOCALHOST'])).to.equal(true)
      expect(isAllowedHost(new URL('https://localhost.example/'), ['localhost'])).to.equal(false)
    })

    it('matches a host:port entry only on that port, taking 443 when the URL names none', function () {
      expect(isAllowedHost(new URL('https://hooks.lan:9999/'), ['hooks.lan:9999'])).to.equal(true)
      expect(isAllowedHost(new URL('https://hooks.lan:8443/'), ['hooks.lan:9999'])).to.equal(false)
      expect(isAllowedHost(new URL('https://hooks.lan/'), ['hooks.lan:443'])).to.equal(true)
      expect(isAllowedHost(new URL('https://hooks.lan/'), ['hooks.lan:8443'])).to.equal(false)
    })

    it('matches bracketed IPv6 entries with and without a port', function () {
      expect(isAllowedHost(new URL('https://[::1]:8443/'), ['[::1]'])).to.equal(true)
      expect(isAllowedHost(new URL('https://[::1]:8443/'), ['[0:0::1]:8443'])).to.equal(true)
      expect(isAllowedHost(new URL('https://[::1]:9000/'), ['[::1]:8443'])).to.equal(false)
    })
  })

  describe('checkLiteralTarget', function () {
    it('throws SsrfBlockedError for 127.0.0.1', function () {
      expect(() => checkLiteralTarget(new URL('https://127.0.0.1/'), policy(fixedLookup())))
        .to.throw(SsrfBlockedError, 'webhook target 127.0.0.1 is a loopback address')
        .with.property('code', 'ESSRFBLOCKED')
    })

    it('passes 8.8.8.8, an allow-listed loopback literal and any hostname', function () {
      const target = policy(fixedLookup('127.0.0.1'), ['127.0.0.1:8443'])
      expect(() => checkLiteralTarget(new URL('https://8.8.8.8/'), target)).not.to.throw()
      expect(() => checkLiteralTarget(new URL('https://127.0.0.1:8443/'), target)).not.to.throw()
      expect(() => checkLiteralTarget(new URL('https://localhost/'), target)).not.to.throw()
    })
  })

  describe('guardedLookup', function () {
    const never = (): boolean => false

    it('blocks a DNS rebinding that answers public at registration and loopback at delivery', async function () {
      const answers = ['93.184.215.14', '127.0.0.1']
      const rebinding: LookupFn = async () => [{address: answers.shift() ?? '127.0.0.1', family: 4}]
      const target = policy(rebinding)

      await checkWebhookUrl('https://rebind.example.com/', target)
      const error = await lookupError(runLookup(guardedLookup(target, never), 'rebind.example.com', {}))
      expect(error.code).to.equal('ESSRFBLOCKED')
      expect(error.message).to.equal('webhook target rebind.example.com resolves to no public address (127.0.0.1)')
    })

    it('hands over only the public addresses of a mixed answer when options.all is set', async function () {
      const lookup = guardedLookup(policy(fixedLookup('10.0.0.5', '93.184.215.14', '::1', '2606:2800:21f:cb07:6820:80da:af6b:8b2c')), never)
      expect(await runLookup(lookup, 'mixed.example.com', {all: true})).to.deep.equal({
        address: [
          {address: '93.184.215.14', family: 4},
          {address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6},
        ],
        family: undefined,
      })
    })

    it('hands over the first public address and its family when options.all is not set', async function () {
      const lookup = guardedLookup(policy(fixedLookup('10.0.0.5', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.14')), never)
      expect(await runLookup(lookup, 'mixed.example.com', {})).to.deep.equal({address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6})
      expect(await runLookup(lookup, 'mixed.example.com', {family: 4})).to.deep.equal({address: '93.184.215.14', family: 4})
    })

    it('hands over loopback addresses for an allowed hostname', async function () {
      const lookup = guardedLookup(policy(fixedLookup('127.0.0.1', '::1')), (hostname) => hostname === 'localhost')
      expect((await runLookup(lookup, 'localhost', {all: true})).address).to.deep.equal([
        {address: '127.0.0.1', family: 4},
        {address: '::1', family: 6},
      ])
      await lookupError(runLookup(lookup, 'elsewhere.example.com', {all: true}))
    })

    it('passes a resolver failure through unchanged', async function () {
      const lookup = guardedLookup(policy(notFound()), never)
      try {
        await runLookup(lookup, 'nowhere.invalid', {all: true})
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).to.equal('ENOTFOUND')
        return
      }
      throw new Error('expected the lookup to fail')
    })
  })

  describe('guardedLookup on a real socket', function () {
    let server: http.Server
    let port: number
    let connections: number

    beforeEach(async function () {
      connections = 0
      server = http.createServer((_request, response) => response.end('ok'))
      server.on('connection', () => connections++)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as AddressInfo).port
      // The root hook only lets loopback names through nock; the made-up name must pass too.
      nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\]|::1|rebind\.test)(:\d+)?$/.test(host))
    })

    afterEach(async function () {
      nock.disableNetConnect()
      nock.enableNetConnect((host) => /^(127\.0\.0\.1|localhost|\[::1\]|::1)(:\d+)?$/.test(host))
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())))
    })

    function get(lookup: ReturnType<typeof guardedLookup>): Promise<{status: number; body: string}> {
      return new Promise((resolve, reject) => {
        http
          .get({host: 'rebind.test', port, path: '/', lookup, agent: false}, (response) => {
            let body = ''
            response.setEncoding('utf8')
            response.on('data', (chunk: string) => (body += chunk))
            response.on('end', () => resolve({status: response.statusCode ?? 0, body}))
          })
          .on('error', reject)
      })
    }

    it('refuses to connect when the name resolves to loopback, and the server sees nothing', async function () {
      const lookup = guardedLookup(policy(fixedLookup('127.0.0.1')), () => false)
      const error = await lookupError(get(lookup))
      expect(error.code).to.equal('ESSRFBLOCKED')
      expect(connections).to.equal(0)
    })

    it('connects when the name is allowed', async function () {
      const lookup = guardedLookup(policy(fixedLookup('127.0.0.1')), (hostname) => hostname === 'rebind.test')
      expect(await get(lookup)).to.deep.equal({status: 200, body: 'ok'})
      expect(connections).to.equal(1)
    })
  })
})
