import {Flags} from '@oclif/core'

import {BaseCommand} from '../_shared/base-command.js'
import {formatLimits, type LimitsOutput, limitsOutput, scopeFlags, scopeOf} from '../_shared/ratelimit-output.js'

export default class RatelimitSet extends BaseCommand {
  static override description =
    'Override the rate limits of a customer or a key (a key override beats a customer override beats the default); running daemons apply it within 10 s'
  static override examples = [
    '<%= config.bin %> ratelimit set --customer 6f1c... --per-minute 300 --per-hour 10000',
    '<%= config.bin %> ratelimit set --key 2b6e... --bulk-per-minute 30',
  ]
  static override flags = {
    ...scopeFlags,
    'per-minute': Flags.integer({description: 'default bucket, requests per minute', min: 1}),
    'per-hour': Flags.integer({description: 'default bucket, requests per hour', min: 1}),
    'bulk-per-minute': Flags.integer({description: 'bulk bucket, requests per minute', min: 1}),
  }

  async run(): Promise<LimitsOutput> {
    const {flags} = await this.parse(RatelimitSet)
    const view = await this.withServices(['rateLimits'], (services) =>
      services.rateLimits.set(scopeOf(flags), {perMinute: flags['per-minute'], perHour: flags['per-hour'], bulkPerMinute: flags['bulk-per-minute']}),
    )
    const output = limitsOutput(view)
    this.log(formatLimits(output))
    return output
  }
}
