import {BaseCommand, uuidFlag} from '../_shared/base-command.js'

export default class MaintenanceReindex extends BaseCommand {
  static override description = [
    'Rebuild the words of names and emails that search looks up, from the leads themselves',
    '',
    'Every write keeps them in step; run this after leads were written around the service (a ' +
      'restore, leads seeded straight into the database). Each batch of 1,000 leads is locked only ' +
      'while its words are replaced, so the service keeps taking writes.',
  ].join('\n')
  static override examples = ['<%= config.bin %> maintenance reindex', '<%= config.bin %> maintenance reindex --customer 3f1c…']
  static override flags = {
    customer: uuidFlag({description: 'reindex only this customer (UUID); default: every customer'}),
  }

  async run(): Promise<{leads: number}> {
    const {flags} = await this.parse(MaintenanceReindex)
    const leads = await this.withServices(['customers', 'searchIndex'], async (services) => {
      if (flags.customer !== undefined) await services.customers.get(flags.customer)
      return services.searchIndex.rebuild(flags.customer)
    })
    if (!this.jsonEnabled()) this.log(`Reindexed the words of ${leads.toLocaleString('en-US')} lead${leads === 1 ? '' : 's'}.`)
    return {leads}
  }
}
