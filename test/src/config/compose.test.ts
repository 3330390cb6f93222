import fs from 'node:fs'
import path from 'node:path'

import {expect} from 'chai'
import {parse} from 'yaml'

import {CONFIG_VARIABLES, loadConfig} from '../../../src/config/config.js'
import {PROJECT_ROOT} from '../../helpers/cli.js'

interface Service {
  image?: string
  build?: string
  command?: string[]
  environment?: Record<string, string>
  depends_on?: Record<string, {condition: string}>
  healthcheck?: {test?: string[]; disable?: boolean}
  deploy?: {replicas?: number}
  restart?: string
}

describe('docker-compose.yml', function () {
  const compose = parse(fs.readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8'), {merge: true}) as {services: Record<string, Service>}
  const services = compose.services

  it('runs MariaDB 10.11 (the server CI proves), Redis 7, a one-shot migrate, two API replicas and a worker', function () {
    expect(Object.keys(services)).to.have.members(['db', 'redis', 'migrate', 'api', 'worker'])
    expect(services['db']!.image).to.equal('mariadb:10.11')
    // The database the image creates must be utf8mb4, as .ci/run creates the test database.
    expect(services['db']!.command).to.include('--character-set-server=utf8mb4')
    expect(services['redis']!.image).to.match(/^redis:7/)
    expect(services['migrate']!.command).to.deep.equal(['migrate'])
    expect(services['migrate']!.restart).to.equal('no')
    expect(services['api']!.command).to.deep.equal(['daemon', '--role', 'api'])
    expect(services['api']!.deploy?.replicas).to.equal(2)
    expect(services['worker']!.command).to.deep.equal(['daemon', '--role', 'worker'])
  })

  it('starts the daemons only after healthy stores and a finished migration', function () {
    for (const name of ['api', 'worker']) {
      expect(services[name]!.depends_on).to.deep.equal({
        db: {condition: 'service_healthy'},
        redis: {condition: 'service_healthy'},
        migrate: {condition: 'service_completed_successfully'},
      })
    }
    for (const name of ['db', 'redis', 'api']) expect(services[name]!.healthcheck?.test?.length).to.be.greaterThan(1)
    // The worker answers /healthz on its own port, so the image's HEALTHCHECK is not switched off.
    expect(services['worker']!.healthcheck).to.equal(undefined)
  })

  it('sets only variables the configuration module reads, and values it accepts', function () {
    for (const name of ['migrate', 'api', 'worker']) {
      const environment = services[name]!.environment ?? {}
      for (const variable of Object.keys(environment)) expect(CONFIG_VARIABLES as readonly string[], `${name}: ${variable}`).to.include(variable)
      const resolved = Object.fromEntries(
        Object.entries(environment).map(([key, value]) => [key, value.startsWith('${LEADS_MASTER_KEY') ? 'ab'.repeat(32) : value]),
      )
      const config = loadConfig(resolved)
      expect(config.database.client).to.equal('mysql')
      expect(config.redis).to.deep.equal({mode: 'single', url: 'redis://redis:6379/0'})
    }
    expect(loadConfig({...services['api']!.environment, LEADS_MASTER_KEY: 'ab'.repeat(32)}).host).to.equal('0.0.0.0')
  })
})
