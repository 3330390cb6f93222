import {BaseCommand} from '../_shared/base-command.js'
import {formatLimits, type LimitsOutput, limitsOutput, scopeFlags, scopeOf} from '../_shared/ratelimit-output.js'

export default class RatelimitShow extends BaseCommand {
  static override description = "Show a customer's or key's override, the limits in force, and (for a key, with Redis) its current usage"
  static override flags = {...scopeFlags}

  async run(): Promise<LimitsOutput> {
    const {flags} = await this.parse(RatelimitShow)
    const scope = scopeOf(flags)
    const output = await this.withServices(async (services) => {
      const view = await services.rateLimits.show(scope)
      // Without Redis the counters live in the daemon's memory, out of this process's reach.
      const usage = scope.type === 'key' && services.redis ? await services.limiter.usage(scope.id) : undefined
      return limitsOutput(view, usage)
    }, {redis: true})
    this.log(formatLimits(output))
    return output
  }
}
