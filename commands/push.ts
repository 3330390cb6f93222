import {Args, Flags} from '@oclif/core'

import {clientFromSettings} from '../src/client/client-settings.js'
import {detectFormat} from '../src/client/lead-file.js'
import {type PushReport, pushFile} from '../src/client/push.js'
import {ON_DUPLICATE} from '../src/leads/bulk-plan.js'
import {renderPushProgress} from '../src/ui/render.js'
import {terminalSafe} from '../src/ui/terminal-text.js'
import {announceWait, BaseCommand, clientFlags} from './_shared/base-command.js'

export default class Push extends BaseCommand {
  static override description = `Push leads from a CSV or NDJSON file through the bulk endpoint, 500 rows per request

CSV needs a header row. Columns: contact_name, contact_phone, contact_email, stage_slug, source_platform, source_type, and custom_fields.<slug> (a string) or custom_fields.<slug>:number / :boolean, or custom_fields holding a JSON object. Empty cells are left out. NDJSON has one lead object per line, in the API's shape. What \`leads pull\` writes (ndjson, csv) is valid input: the fields the server sets (id, customer_id, created_at, updated_at, status, owner, ...) are ignored, with a note on stderr, and a pulled lead's current_stage gives its stage_slug.

Reaches the API with --base-url, --token (scope public_api:leads:write) and --customer, else LEADS_BASE_URL, LEADS_API_TOKEN and LEADS_CUSTOMER_ID, else the profile (see leads config). Exits 1 when any row failed.`
  static override examples = ['<%= config.bin %> push leads.csv', '<%= config.bin %> push leads.ndjson --on-duplicate skip --dry-run']
  static override args = {
    file: Args.string({description: 'CSV or NDJSON file', required: true}),
  }
  static override flags = {
    ...clientFlags,
    'dry-run': Flags.boolean({description: 'report what would happen; write nothing'}),
    'on-duplicate': Flags.string({description: 'what to do with a row that matches an existing lead', options: [...ON_DUPLICATE], default: 'update'}),
    format: Flags.string({description: 'file format; default: from the extension', options: ['csv', 'ndjson']}),
  }

  async run(): Promise<PushReport> {
    const {args, flags} = await this.parse(Push)
    // Live progress on stderr only when it is a terminal; stdout keeps the report alone.
    const settings = this.clientSettings(flags)
    const view = process.stderr.isTTY ? await renderPushProgress() : null
    const client = clientFromSettings(settings, {onWait: (wait) => (view ? view.wait(wait) : announceWait(wait))})
    let report: PushReport
    try {
      report = await pushFile(client, {
        file: args.file,
        format: (flags.format as 'csv' | 'ndjson' | undefined) ?? detectFormat(args.file),
        dryRun: flags['dry-run'],
        onDuplicate: flags['on-duplicate'] as (typeof ON_DUPLICATE)[number],
        onProgress: (summary) => view?.update(summary),
      })
    } finally {
      view?.done()
    }
    if (!this.jsonEnabled()) this.printReport(report)
    if (report.summary.failed > 0) process.exitCode = 1
    return report
  }

  private printReport(report: PushReport): void {
    if (report.ignored_fields.length > 0) {
      process.stderr.write(`note: ignored the fields the server sets: ${report.ignored_fields.join(', ')}\n`)
    }
    // A row's message can quote the file and what the server said.
    for (const row of report.failed) this.log(terminalSafe(`line ${row.line}: ${row.message}`))
    for (const {slug, lines} of report.unknown_custom_fields) {
      this.log(terminalSafe(`unknown custom field "${slug}" dropped on ${lines.length} row(s), first at line ${lines[0]}`))
    }
    const {summary} = report
    this.log(
      `${report.dry_run ? 'Dry run: ' : ''}${summary.received} rows: ${summary.created} created, ${summary.updated} updated, ` +
        `${summary.skipped} skipped, ${summary.failed} failed`,
    )
  }
}
