import {renderTable} from '../../src/ui/render.js'
import {BaseCommand, sharedFlags, tableFlags} from '../_shared/base-command.js'
import {STAGE_COLUMNS, type StageOutput, stageOutput} from '../_shared/setup-output.js'

export default class StagesList extends BaseCommand {
  static override description = "List a customer's pipeline stages in order"
  static override examples = ['<%= config.bin %> stages list --customer 8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21']
  static override flags = {customer: sharedFlags.customer, ...tableFlags}

  async run(): Promise<{stages: StageOutput[]}> {
    const {flags} = await this.parse(StagesList)
    const stages = (await this.withServices(['customers'], (services) => services.customers.listStages(flags.customer))).map(stageOutput)
    if (!this.jsonEnabled()) await renderTable(STAGE_COLUMNS, stages, 'No stages.', this.tableDisplay(flags))
    return {stages}
  }
}
