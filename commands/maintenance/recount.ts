import {BaseCommand, uuidFlag} from '../_shared/base-command.js'

export default class MaintenanceRecount extends BaseCommand {
  static override description = [
    "Rebuild the kept lead counts behind the list API's total from the leads themselves",
    '',
    'Every write keeps the counts in step; run this after data was written around the service ' +
      '(a restore, leads seeded straight into the database) or when a total looks wrong. Writes of ' +
      'the customer being recounted wait for it (about a second per million leads on MariaDB).',
  ].join('\n')
  static override examples = ['<%= config.bin %> maintenance recount', '<%= config.bin %> maintenance recount --customer 3f1c…']
  static override flags = {
    customer: uuidFlag({description: 'recount only this customer (UUID); default: every customer'}),
  }

  async run(): Promise<{customers: number}> {
    const {flags} = await this.parse(MaintenanceRecount)
    const customers = await this.withServices(['customers', 'leadCounts'], async (services) => {
      if (flags.customer !== undefined) await services.customers.get(flags.customer)
      return services.leadCounts.recount(flags.customer)
    })
    if (!this.jsonEnabled()) this.log(`Recounted the leads of ${customers} customer${customers === 1 ? '' : 's'}.`)
    return {customers}
  }
}
