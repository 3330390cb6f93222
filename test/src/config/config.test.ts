import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../../src/config/config.js'
import {ConfigError} from '../../../src/shared/errors.js'

const KEY_HEX = '0f'.repeat(32)

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, '/srv/app')
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError)
    return error as ConfigError
  }
  throw new Error('expected loadConfig to throw')
}

describe('loadConfig', function () {
  it('defaults to the embedded SQLite file under ./.leads and loopback port 8080', function () {
    const config = loadConfig({}, '/srv/app')
    expect(config.database).to.deep.equal({client: 'sqlite', filename: '/srv/app/.leads/leads.db', url: 'sqlite://./.leads/leads.db'})
    expect(config.dataDir).to.equal('/srv/app/.leads')
    expect(config.host).to.equal('127.0.0.1')
    expect(config.port).to.equal(8080)
    expect(config.redisUrl).to.equal(null)
    expect(config.masterKey).to.equal(null)
    expect(config.webhookAllowHosts).to.deep.equal([])
  })

  it('returns a frozen object', function () {
    const config = loadConfig({}, '/srv/app')
    expect(Object.isFrozen(config)).to.equal(true)
    expect(Object.isFrozen(config.database)).to.equal(true)
  })

  it('accepts absolute SQLite paths', function () {
    const config = loadConfig({LEADS_DATABASE_URL: 'sqlite:///var/lib/leads/x.db'}, '/srv/app')
    expect(config.database.client === 'sqlite' && config.database.filename).to.equal(path.resolve('/var/lib/leads/x.db'))
  })

  it('requires LEADS_MASTER_KEY with MySQL and names the variable', function () {
    const error = configError({LEADS_DATABASE_URL: 'mysql://root@127.0.0.1:3306/leads'})
    expect(error.variable).to.equal('LEADS_MASTER_KEY')
    expect(error.message).to.match(/^LEADS_MASTER_KEY is required/)
  })

  it('accepts MySQL with a master key in hex or base64', function () {
    const hex = loadConfig({LEADS_DATABASE_URL: 'mysql://root@127.0.0.1:3306/leads', LEADS_MASTER_KEY: KEY_HEX})
    expect(hex.masterKey?.toString('hex')).to.equal(KEY_HEX)
    const base64 = loadConfig({LEADS_MASTER_KEY: Buffer.from(KEY_HEX, 'hex').toString('base64')})
    expect(base64.masterKey?.toString('hex')).to.equal(KEY_HEX)
  })

  for (const [variable, value, pattern] of [
    ['LEADS_DATABASE_URL', 'postgres://x/y', /unsupported scheme/],
    ['LEADS_DATABASE_URL', 'not a url', /is not a URL/],
    ['LEADS_DATABASE_URL', 'mysql://root@127.0.0.1:3306', /names no database/],
    ['LEADS_REDIS_URL', 'http://127.0.0.1:6379', /unsupported scheme/],
    ['LEADS_REDIS_URL', '::', /is not a URL/],
    ['LEADS_PORT', '80a', /integer/],
    ['LEADS_PORT', '70000', /integer/],
    ['LEADS_MASTER_KEY', 'short', /32 bytes/],
    ['LEADS_LOG_LEVEL', 'loud', /must be one of/],
    ['LEADS_BASE_URL', 'ftp://x', /http\(s\) URL/],
  ] as const) {
    it(`rejects ${variable}=${value} with one line naming the variable`, function () {
      const error = configError({[variable]: value})
      expect(error.variable).to.equal(variable)
      expect(error.message.startsWith(variable)).to.equal(true)
      expect(error.message).to.match(pattern)
      expect(error.message).not.to.include('\n')
    })
  }

  it('parses the webhook allow list', function () {
    const config = loadConfig({LEADS_WEBHOOK_ALLOW_HOSTS: 'Localhost:8443, 127.0.0.1 ,'})
    expect(config.webhookAllowHosts).to.deep.equal(['localhost:8443', '127.0.0.1'])
  })
})
