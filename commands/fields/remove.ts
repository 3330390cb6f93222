import {Flags} from '@oclif/core'

import {BaseCommand, sharedFlags} from '../_shared/base-command.js'

export default class FieldsRemove extends BaseCommand {
  static override description =
    'Remove a custom-field definition; values already on leads are kept and reported as unknown on later pushes'
  static override flags = {
    customer: sharedFlags.customer,
    slug: Flags.string({description: 'slug of the field to remove', required: true}),
  }

  async run(): Promise<{slug: string; removed: true}> {
    const {flags} = await this.parse(FieldsRemove)
    await this.withServices((services) => services.customers.removeField(flags.customer, flags.slug))
    this.log(`Removed field ${flags.slug}.`)
    return {slug: flags.slug, removed: true}
  }
}
