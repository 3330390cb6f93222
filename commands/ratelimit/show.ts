import {BaseCommand} from '../_shared/base-command.js'
import {formatLimits, type LimitsOutput, limitsOutput, scopeFlags, scopeOf} from '../_shared/ratelimit-output.js'

export default class RatelimitShow extends BaseCommand {
  static override description = "Show a customer's or key's override, the limits in force, and (for a key, with Redis) its current usage"
  static override examples = [
    '<%= config.bin %> ratelimit show --key 0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f',
    '<%= config.bin %> ratelimit show --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21 --json',
  ]
  static override flags = {...scopeFlags}

  async run(): Promise<LimitsOutput> {
    const {flags} = await this.parse(RatelimitShow)
    const scope = scopeOf(flags)
    const output = await this.withServices(
      ['limiter', 'rateLimits', 'redis'],
      async (services) => {
        const view = await services.rateLimits.show(scope)
        // Without Redis the counters live in the daemon's memory, out of this process's reach.
        const usage = scope.type === 'key' && services.redis ? await services.limiter.usage(scope.id) : undefined
        return limitsOutput(view, usage)
      },
      // Only a key's usage is read from Redis: a customer's override and limits are in the database, so they show while Redis is down.
      {redis: scope.type === 'key'},
    )
    this.log(formatLimits(output))
    return output
  }
}
