import {Args, Flags} from '@oclif/core'

import {parseSince} from '../../src/shared/duration.js'
import {BaseCommand, confirmFlags} from '../_shared/base-command.js'

export default class DeliveriesRedeliver extends BaseCommand {
  static override description = 'Queue deliveries again: the same X-Service-Delivery, fresh attempts and signatures. Give ids, or --webhook with --failed'
  static override strict = false
  static override examples = [
    '<%= config.bin %> deliveries redeliver 0f8c... 7a1d...',
    '<%= config.bin %> deliveries redeliver --webhook wh_3b1... --failed --since 2026-11-20T00:00:00Z --yes',
  ]
  static override args = {deliveryIds: Args.string({description: 'delivery ids (UUIDs)'})}
  static override flags = {
    webhook: Flags.string({description: "redeliver this webhook's deliveries (with --failed)", dependsOn: ['failed']}),
    failed: Flags.boolean({description: 'every failed delivery of --webhook', dependsOn: ['webhook']}),
    since: Flags.string({description: 'with --failed: only deliveries created at or after this ISO-8601 time, or a duration ago (2h, 1d)'}),
    ...confirmFlags,
  }

  async run(): Promise<{redelivered: string[]}> {
    const {argv, flags} = await this.parse(DeliveriesRedeliver)
    const ids = argv as string[]
    // Usage errors (exit 2), checked here: oclif's dependsOn would print the usage line as `[--since <value> ]`.
    if (flags.since !== undefined && !flags.failed) this.error('--since only applies with --webhook WH_ID --failed', {exit: 2})
    if (flags.webhook === undefined && ids.length === 0)
      this.error('give delivery ids, or --webhook WH_ID --failed (see `leads deliveries redeliver --help`)', {exit: 2})
    if (flags.webhook !== undefined && ids.length > 0) this.error('give delivery ids or --webhook WH_ID --failed, not both', {exit: 2})
    const since = flags.since === undefined ? undefined : parseSince(flags.since, 'since', Date.now())
    // Named ids are the operator's own choice; a whole webhook's failures may be thousands of events.
    if (flags.webhook !== undefined) {
      await this.confirm(`Send every failed delivery of ${flags.webhook}${flags.since ? ` since ${flags.since}` : ''} again?`, flags.yes)
    }
    // With Redis the deliveries go straight to the workers' stream; without, sweepers find them in the database.
    const redelivered = await this.withServices(
      ['deliveries'],
      (services) => (flags.webhook === undefined ? services.deliveries.redeliver(ids) : services.deliveries.redeliverFailed(flags.webhook, since)),
      {redis: true},
    )
    this.log(`Queued ${redelivered.length} deliver${redelivered.length === 1 ? 'y' : 'ies'} again; a running daemon sends them within a few seconds.`)
    return {redelivered}
  }
}
