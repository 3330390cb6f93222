import {Flags} from '@oclif/core'

import {isoTime} from '../../src/shared/clock.js'
import {BaseCommand} from '../_shared/base-command.js'

export default class CustomersCreate extends BaseCommand {
  static override description = 'Create a customer with the default pipeline stages and the reserved lead_line field'
  static override examples = ['<%= config.bin %> customers create --name "Acme Realty"']
  static override flags = {
    name: Flags.string({description: 'display name', required: true}),
    id: Flags.string({description: 'use this UUID instead of a generated one'}),
  }

  async run(): Promise<{id: string; name: string; created_at: string}> {
    const {flags} = await this.parse(CustomersCreate)
    const customer = await this.withServices(['customers'], (services) => services.customers.create({name: flags.name, id: flags.id}))
    this.log(customer.id)
    return {id: customer.id, name: customer.name, created_at: isoTime(customer.createdAt)}
  }
}
