import {Flags} from '@oclif/core'

import {FIELD_TYPES} from '../../src/customers/customer-types.js'
import {BaseCommand, sharedFlags} from '../_shared/base-command.js'
import {type FieldOutput, fieldOutput} from '../_shared/setup-output.js'

export default class FieldsAdd extends BaseCommand {
  static override description = 'Define a custom field for a customer'
  static override examples = ['<%= config.bin %> fields add --customer 6f1c... --slug budget --type number --name "Budget"']
  static override flags = {
    customer: sharedFlags.customer,
    slug: Flags.string({description: 'slug used as the key in custom_fields (a-z, 0-9, _)', required: true}),
    type: Flags.string({description: 'value type', required: true, options: [...FIELD_TYPES]}),
    name: Flags.string({description: 'display name; leave it out for the slug (an empty one is refused)'}),
  }

  async run(): Promise<FieldOutput> {
    const {flags} = await this.parse(FieldsAdd)
    const field = await this.withServices(['customers'], (services) =>
      services.customers.addField(flags.customer, {slug: flags.slug, type: flags.type, name: flags.name}),
    )
    this.log(`Added field ${field.slug} (${field.type}).`)
    return fieldOutput(field)
  }
}
