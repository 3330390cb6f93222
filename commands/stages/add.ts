import {Flags} from '@oclif/core'

import {BaseCommand, sharedFlags} from '../_shared/base-command.js'
import {type StageOutput, stageOutput} from '../_shared/setup-output.js'

export default class StagesAdd extends BaseCommand {
  static override description = "Append a stage to a customer's pipeline"
  static override examples = ['<%= config.bin %> stages add --customer 6f1c... --slug showing --name "Showing booked" --color "#0ea5e9"']
  static override flags = {
    customer: sharedFlags.customer,
    slug: Flags.string({description: 'slug clients send as stage_slug (a-z, 0-9, _)', required: true}),
    name: Flags.string({description: 'display name; leave it out for the slug (an empty one is refused)'}),
    color: Flags.string({description: 'colour as #rrggbb', default: '#64748b'}),
  }

  async run(): Promise<StageOutput> {
    const {flags} = await this.parse(StagesAdd)
    const stage = await this.withServices(['customers'], (services) =>
      services.customers.addStage(flags.customer, {slug: flags.slug, name: flags.name, color: flags.color}),
    )
    this.log(`Added stage ${stage.slug} at position ${stage.position}.`)
    return stageOutput(stage)
  }
}
