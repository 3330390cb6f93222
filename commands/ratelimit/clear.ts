import {BaseCommand} from '../_shared/base-command.js'
import {scopeFlags, scopeOf} from '../_shared/ratelimit-output.js'

export default class RatelimitClear extends BaseCommand {
  static override description = "Remove a customer's or key's override; running daemons return to the inherited limits within 10 s"
  static override examples = [
    '<%= config.bin %> ratelimit clear --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21',
    '<%= config.bin %> ratelimit clear --key 0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f',
  ]
  static override flags = {...scopeFlags}

  async run(): Promise<{scope: {type: string; id: string}; cleared: boolean}> {
    const {flags} = await this.parse(RatelimitClear)
    const scope = scopeOf(flags)
    const cleared = await this.withServices(['rateLimits'], (services) => services.rateLimits.clear(scope))
    this.log(cleared ? `Cleared the override of ${scope.type} ${scope.id}.` : `${scope.type} ${scope.id} had no override.`)
    return {scope, cleared}
  }
}
