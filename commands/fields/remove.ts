import {Flags} from '@oclif/core'

import {BaseCommand, confirmFlags, sharedFlags} from '../_shared/base-command.js'

export default class FieldsRemove extends BaseCommand {
  static override description = 'Remove a custom-field definition; values already on leads are kept and reported as unknown on later pushes'
  static override flags = {
    customer: sharedFlags.customer,
    slug: Flags.string({description: 'slug of the field to remove', required: true}),
    ...confirmFlags,
  }
  static override examples = ['<%= config.bin %> fields remove --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --slug budget --yes']

  async run(): Promise<{slug: string; removed: true}> {
    const {flags} = await this.parse(FieldsRemove)
    await this.confirm(`Remove field ${flags.slug} of customer ${flags.customer}? Later pushes report its values as unknown.`, flags.yes)
    await this.withServices(['customers'], (services) => services.customers.removeField(flags.customer, flags.slug))
    this.log(`Removed field ${flags.slug}.`)
    return {slug: flags.slug, removed: true}
  }
}
