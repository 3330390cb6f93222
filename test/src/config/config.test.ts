import path from 'node:path'

import {expect} from 'chai'

import {loadConfig} from '../../../src/config/config.js'
import {describeRedis} from '../../../src/config/redis-config.js'
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
  it('keeps the files of an in-memory SQLite database (its generated master key) under ./.leads, not in the working directory', function () {
    expect(loadConfig({LEADS_DATABASE_URL: 'sqlite://:memory:'}, '/srv/app').dataDir).to.equal('/srv/app/.leads')
  })

  it('defaults to the embedded SQLite file under ./.leads and loopback port 8080', function () {
    const config = loadConfig({}, '/srv/app')
    expect(config.database).to.deep.equal({client: 'sqlite', filename: '/srv/app/.leads/leads.db', url: 'sqlite://./.leads/leads.db'})
    expect(config.dataDir).to.equal('/srv/app/.leads')
    expect(config.host).to.equal('127.0.0.1')
    expect(config.port).to.equal(8080)
    expect(config.redis).to.equal(null)
    expect(config.masterKey).to.equal(null)
    expect(config.webhookAllowHosts).to.deep.equal([])
    expect(config.statementTimeoutMs).to.equal(2000)
  })

  it('reads the statement time limit in milliseconds', function () {
    expect(loadConfig({LEADS_STATEMENT_TIMEOUT_MS: '750'}).statementTimeoutMs).to.equal(750)
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
    ['LEADS_STATEMENT_TIMEOUT_MS', '0', /from 1 to 600000/],
    ['LEADS_STATEMENT_TIMEOUT_MS', '2s', /from 1 to 600000/],
    ['LEADS_STATEMENT_TIMEOUT_MS', '600001', /from 1 to 600000/],
    ['LEADS_METRICS', 'yes', /must be 1 \(serve metrics\) or 0, got "yes"/],
    ['LEADS_METRICS', 'true', /must be 1 \(serve metrics\) or 0, got "true"/],
    // A URL where host[:port] is expected would exempt nothing, silently: every webhook to it refused.
    ['LEADS_WEBHOOK_ALLOW_HOSTS', 'https://localhost:8443', /has "https:\/\/localhost:8443", which is not host\[:port\]/],
    ['LEADS_WEBHOOK_ALLOW_HOSTS', 'localhost,receiver.test/hooks', /has "receiver.test\/hooks", which is not host\[:port\]/],
    ['LEADS_WEBHOOK_ALLOW_HOSTS', 'localhost:99999', /has "localhost:99999", which is not host\[:port\]/],
    ['LEADS_WEBHOOK_ALLOW_HOSTS', ':8443', /has ":8443", which is not host\[:port\]/],
  ] as const) {
    it(`rejects ${variable}=${value} with one line naming the variable`, function () {
      const error = configError({[variable]: value})
      expect(error.variable).to.equal(variable)
      expect(error.message.startsWith(variable)).to.equal(true)
      expect(error.message).to.match(pattern)
      expect(error.message).not.to.include('\n')
    })
  }

  it('serves metrics with LEADS_METRICS=1 only, and not with 0 or unset', function () {
    expect(loadConfig({LEADS_METRICS: '1'}).metricsEnabled).to.equal(true)
    expect(loadConfig({LEADS_METRICS: '0'}).metricsEnabled).to.equal(false)
    expect(loadConfig({}).metricsEnabled).to.equal(false)
  })

  it('parses the webhook allow list', function () {
    const config = loadConfig({LEADS_WEBHOOK_ALLOW_HOSTS: 'Localhost:8443, 127.0.0.1 ,[::1]:9443'})
    expect(config.webhookAllowHosts).to.deep.equal(['localhost:8443', '127.0.0.1', '[::1]:9443'])
  })
})

describe('loadConfig: Redis topology', function () {
  const open = {username: null, password: null, tls: false}

  it('keeps LEADS_REDIS_URL as one server, exactly as written', function () {
    expect(loadConfig({LEADS_REDIS_URL: 'redis://:pw@cache:6379/2'}).redis).to.deep.equal({mode: 'single', url: 'redis://:pw@cache:6379/2'})
  })

  it('reads cluster seed nodes as host:port, IPv6 in brackets, spaces and empty entries ignored', function () {
    const config = loadConfig({LEADS_REDIS_CLUSTER_NODES: 'redis-a:7000, 10.0.0.2:7001,,[::1]:7002'})
    expect(config.redis).to.deep.equal({
      mode: 'cluster',
      nodes: [
        {host: 'redis-a', port: 7000},
        {host: '10.0.0.2', port: 7001},
        {host: '::1', port: 7002},
      ],
      ...open,
    })
    expect(Object.isFrozen(config.redis)).to.equal(true)
  })

  it('reads credentials and TLS from cluster nodes written as URLs', function () {
    const config = loadConfig({LEADS_REDIS_CLUSTER_NODES: 'rediss://app:s%40cret@a:7000,rediss://app:s%40cret@b:7000'})
    expect(config.redis).to.deep.equal({
      mode: 'cluster',
      nodes: [
        {host: 'a', port: 7000},
        {host: 'b', port: 7000},
      ],
      username: 'app',
      password: 's@cret',
      tls: true,
    })
  })

  it('reads sentinels and the master name', function () {
    const config = loadConfig({LEADS_REDIS_SENTINELS: 's1:26379,s2:26379,s3:26379', LEADS_REDIS_SENTINEL_MASTER: 'mymaster'})
    expect(config.redis).to.deep.equal({
      mode: 'sentinel',
      sentinels: [
        {host: 's1', port: 26379},
        {host: 's2', port: 26379},
        {host: 's3', port: 26379},
      ],
      masterName: 'mymaster',
      ...open,
    })
  })

  for (const [env, variable, pattern] of [
    [{LEADS_REDIS_URL: 'redis://a:6379', LEADS_REDIS_CLUSTER_NODES: 'a:7000'}, 'LEADS_REDIS_CLUSTER_NODES', /cannot be combined with LEADS_REDIS_URL/],
    [
      {LEADS_REDIS_CLUSTER_NODES: 'a:7000', LEADS_REDIS_SENTINELS: 's:26379', LEADS_REDIS_SENTINEL_MASTER: 'm'},
      'LEADS_REDIS_SENTINELS',
      /cannot be combined with LEADS_REDIS_CLUSTER_NODES/,
    ],
    [{LEADS_REDIS_CLUSTER_NODES: ' , '}, 'LEADS_REDIS_CLUSTER_NODES', /names no node/],
    [{LEADS_REDIS_CLUSTER_NODES: 'a:7000,b'}, 'LEADS_REDIS_CLUSTER_NODES', /without a port: "b"/],
    [{LEADS_REDIS_CLUSTER_NODES: 'a:70000'}, 'LEADS_REDIS_CLUSTER_NODES', /not host:port/],
    [{LEADS_REDIS_CLUSTER_NODES: 'a:7000/1'}, 'LEADS_REDIS_CLUSTER_NODES', /has a path in "a:7000\/1"/],
    [{LEADS_REDIS_CLUSTER_NODES: 'http://a:7000'}, 'LEADS_REDIS_CLUSTER_NODES', /unsupported scheme "http:"/],
    [{LEADS_REDIS_CLUSTER_NODES: 'a:7000,a:7000'}, 'LEADS_REDIS_CLUSTER_NODES', /names a:7000 twice/],
    [{LEADS_REDIS_CLUSTER_NODES: 'redis://:pw@a:7000,b:7000'}, 'LEADS_REDIS_CLUSTER_NODES', /mixes credentials or schemes \(b:7000\)/],
    [{LEADS_REDIS_CLUSTER_NODES: 'user:pw@a:7000'}, 'LEADS_REDIS_CLUSTER_NODES', /credentials outside a URL/],
    [{LEADS_REDIS_SENTINELS: 's1:26379'}, 'LEADS_REDIS_SENTINEL_MASTER', /is required with LEADS_REDIS_SENTINELS/],
    [{LEADS_REDIS_SENTINEL_MASTER: 'mymaster'}, 'LEADS_REDIS_SENTINEL_MASTER', /is set without LEADS_REDIS_SENTINELS/],
    [{LEADS_REDIS_SENTINELS: 's1', LEADS_REDIS_SENTINEL_MASTER: 'm'}, 'LEADS_REDIS_SENTINELS', /without a port/],
  ] as const) {
    it(`rejects ${JSON.stringify(env)} with one line naming ${variable}`, function () {
      const error = configError(env)
      expect(error.variable).to.equal(variable)
      expect(error.message.startsWith(variable)).to.equal(true)
      expect(error.message).to.match(pattern)
      expect(error.message).not.to.include('\n')
    })
  }

  it('never repeats a password in its errors', function () {
    const error = configError({LEADS_REDIS_CLUSTER_NODES: 'redis://app:hunter2@a:7000/3'})
    expect(error.message).to.match(/has a path/)
    expect(error.message).not.to.include('hunter2')
  })

  // A URL whose scheme was forgotten (user:password@host) parses as the scheme "user:", so its password is in no password field.
  for (const [env, pattern] of [
    [{LEADS_REDIS_CLUSTER_NODES: 'app:hunter2@a:7000'}, /has credentials outside a URL in "a:7000"/],
    [{LEADS_REDIS_CLUSTER_NODES: ':hunter2@a:7000'}, /has credentials outside a URL in "a:7000"/],
    [{LEADS_REDIS_SENTINELS: 'app:hunter2@s1:26379', LEADS_REDIS_SENTINEL_MASTER: 'm'}, /has credentials outside a URL in "s1:26379"/],
    [{LEADS_REDIS_CLUSTER_NODES: 'app:hunter2@a'}, /has credentials outside a URL in "a"/],
    [{LEADS_BASE_URL: 'admin:hunter2@leads.example.com:8080'}, /must be an http\(s\) URL, got "leads.example.com:8080"/],
  ] as const) {
    it(`never repeats the password of a URL without its scheme: ${Object.keys(env).join(', ')} ${Object.values(env)[0]}`, function () {
      const error = configError(env)
      expect(error.message).to.match(pattern)
      expect(error.message).not.to.include('hunter2')
    })
  }

  it('describes the topology for logs and status without credentials', function () {
    const cluster = loadConfig({LEADS_REDIS_CLUSTER_NODES: 'redis://app:hunter2@a:7000,redis://app:hunter2@b:7001'}).redis!
    expect(describeRedis(cluster)).to.equal('cluster a:7000,b:7001')
    const sentinel = loadConfig({LEADS_REDIS_SENTINELS: 's1:26379,[::1]:26380', LEADS_REDIS_SENTINEL_MASTER: 'mymaster'}).redis!
    expect(describeRedis(sentinel)).to.equal('sentinel master "mymaster" via s1:26379,[::1]:26380')
    expect(describeRedis(loadConfig({LEADS_REDIS_URL: 'redis://u:hunter2@cache:6379/0'}).redis!)).to.equal('redis://cache:6379/0')
  })
})
