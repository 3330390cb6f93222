import {randomUUID} from 'node:crypto'

import {expect} from 'chai'

import type {Services} from '../../../src/services.js'
import {ConflictError, NotFoundError, ValidationError} from '../../../src/shared/errors.js'
import {forEachBackend} from '../../helpers/backends.js'
import {openServices, rejectsWith} from '../../helpers/fixtures.js'

describe('CustomersService', function () {
  forEachBackend((backend) => {
    let services: Services

    before(async function () {
      services = await openServices(backend)
    })
    after(async function () {
      await services.close()
    })

    it('creates a customer with the default pipeline and the reserved lead_line field', async function () {
      const customer = await services.customers.create({name: '  Acme  '})
      expect(customer.name).to.equal('Acme')
      const stages = await services.customers.listStages(customer.id)
      expect(stages.map((stage) => stage.slug)).to.deep.equal(['new', 'contacted', 'qualified', 'proposal', 'closed'])
      expect(stages.every((stage) => /^#[0-9a-f]{6}$/.test(stage.color))).to.equal(true)
      const fields = await services.customers.listFields(customer.id)
      expect(fields).to.have.length(1)
      expect(fields[0]).to.include({slug: 'lead_line', type: 'string', reserved: true})
    })

    it('uses a given id and refuses it twice', async function () {
      const id = randomUUID()
      expect((await services.customers.create({name: 'Given', id})).id).to.equal(id)
      await rejectsWith(services.customers.create({name: 'Again', id}), ConflictError)
      await rejectsWith(services.customers.create({name: 'Bad', id: 'nope'}), ValidationError)
    })

    it('appends stages and refuses duplicates and bad colours', async function () {
      const customer = await services.customers.create({name: 'Stages'})
      const stage = await services.customers.addStage(customer.id, {slug: 'showing', name: 'Showing', color: '#0EA5E9'})
      expect(stage).to.include({slug: 'showing', position: 5, color: '#0ea5e9'})
      await rejectsWith(services.customers.addStage(customer.id, {slug: 'showing', name: 'x'}), ConflictError)
      await rejectsWith(services.customers.addStage(customer.id, {slug: 'bad color', name: 'x'}), ValidationError)
      await rejectsWith(services.customers.addStage(customer.id, {slug: 'ok', name: 'x', color: 'red'}), ValidationError)
    })

    it('adds and removes fields but never the reserved one', async function () {
      const customer = await services.customers.create({name: 'Fields'})
      await services.customers.addField(customer.id, {slug: 'budget', type: 'number'})
      expect((await services.customers.listFields(customer.id)).map((f) => f.slug)).to.deep.equal(['budget', 'lead_line'])
      await rejectsWith(services.customers.addField(customer.id, {slug: 'budget', type: 'number'}), ConflictError)
      await rejectsWith(services.customers.addField(customer.id, {slug: 'when', type: 'date'}), ValidationError)
      await services.customers.removeField(customer.id, 'budget')
      await rejectsWith(services.customers.removeField(customer.id, 'budget'), NotFoundError)
      await rejectsWith(services.customers.removeField(customer.id, 'lead_line'), ValidationError)
    })

    it('reports an unknown customer as not found', async function () {
      await rejectsWith(services.customers.listStages(randomUUID()), NotFoundError)
    })
  })
})
