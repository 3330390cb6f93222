import {isoTime} from '../../src/shared/clock.js'
import type {Column} from '../../src/ui/render.js'
import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, tableFlags, uuidFlag} from '../_shared/base-command.js'

/** An override as `leads ratelimit list` prints it; null values fall through to the customer's override, then the default. */
interface OverrideRow {
  scope: {type: 'customer' | 'key'; id: string}
  customer_id: string | null
  per_minute: number | null
  per_hour: number | null
  bulk_per_minute: number | null
  updated_at: string
}

const limit = (value: number | null) => (value === null ? 'inherited' : String(value))

export default class RatelimitList extends BaseCommand {
  static override description = 'List the rate-limit overrides in place: which customers and keys have one, and its values'
  static override examples = ['<%= config.bin %> ratelimit list', '<%= config.bin %> ratelimit list --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --json']
  static override flags = {
    customer: uuidFlag({description: "only this customer's override and its keys' (UUID)"}),
    ...tableFlags,
  }

  async run(): Promise<{overrides: OverrideRow[]}> {
    const {flags} = await this.parse(RatelimitList)
    const overrides = (await this.withServices(['rateLimits'], (services) => services.rateLimits.list(flags.customer))).map((override): OverrideRow => ({
      scope: override.scope,
      customer_id: override.customerId,
      per_minute: override.perMinute,
      per_hour: override.perHour,
      bulk_per_minute: override.bulkPerMinute,
      updated_at: isoTime(override.updatedAt),
    }))
    if (!this.jsonEnabled()) {
      const columns: Array<Column<OverrideRow>> = [
        {header: 'SCOPE', kind: 'short', rank: 0, value: (row) => row.scope.type},
        {header: 'ID', kind: 'id', rank: 0, value: (row) => row.scope.id},
        {header: 'PER MINUTE', kind: 'short', rank: 1, value: (row) => limit(row.per_minute)},
        {header: 'PER HOUR', kind: 'short', rank: 1, value: (row) => limit(row.per_hour)},
        {header: 'BULK PER MINUTE', kind: 'short', rank: 1, value: (row) => limit(row.bulk_per_minute)},
        ...(flags.customer === undefined ? [{header: 'CUSTOMER', kind: 'id', rank: 2, value: (row: OverrideRow) => row.customer_id ?? '-'} as const] : []),
        {header: 'UPDATED', kind: 'time', rank: 3, value: (row) => row.updated_at},
      ]
      await renderTable(columns, overrides, 'No rate-limit overrides: every key has the default limits.', this.tableDisplay(flags))
    }
    return {overrides}
  }
}
