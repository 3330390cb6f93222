import {isoTime} from '../../src/shared/clock.js'
import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags} from '../_shared/base-command.js'

interface CustomerOutput {
  id: string
  name: string
  created_at: string
}

export default class CustomersList extends BaseCommand {
  static override description = 'List customers'
  static override examples = ['<%= config.bin %> customers list', "<%= config.bin %> customers list --json | jq -r '.customers[].id'"]

  static override flags = {...tableFlags}

  async run(): Promise<{customers: CustomerOutput[]}> {
    const {flags} = await this.parse(CustomersList)
    const customers = (await this.withServices(['customers'], (services) => services.customers.list())).map((customer) => ({
      id: customer.id,
      name: customer.name,
      created_at: isoTime(customer.createdAt),
    }))
    if (!this.jsonEnabled()) {
      await renderTable(
        [
          {header: 'ID', kind: 'id', value: (c: CustomerOutput) => c.id},
          {header: 'NAME', value: (c) => c.name},
          {header: 'CREATED', kind: 'time', value: (c) => c.created_at},
        ],
        customers,
        'No customers yet. Create one with `leads customers create --name ...`.',
        this.tableDisplay(flags),
      )
    }
    return {customers}
  }
}
