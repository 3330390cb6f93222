import {Args, Flags} from '@oclif/core'

import {clientFromSettings} from '../src/client/api-client.js'
import {detectFormat} from '../src/client/lead-file.js'
import {type PushReport, pushFile} from '../src/client/push.js'
import {checkFile, type LocalCheckReport} from '../src/client/push-check.js'
import {ON_DUPLICATE} from '../src/leads/bulk-plan.js'
import {renderPushProgress} from '../src/ui/render.js'
import {terminalSafe} from '../src/ui/terminal-text.js'
import {announceWait, BaseCommand, clientFlags} from './_shared/base-command.js'

export default class Push extends BaseCommand {
  static override description = `Push leads from a CSV or NDJSON file through the bulk endpoint, 500 rows per request

CSV needs a header row as its first line (an empty file is refused, and a first line naming no column push knows is taken for data without a header). Columns: contact_name, contact_phone, contact_email, stage_slug, source_platform, source_type, and custom_fields.<slug> (a string) or custom_fields.<slug>:number / :boolean (true or false, any case), or custom_fields holding a JSON object. Empty cells are left out. NDJSON has one lead object per line, in the API's shape. What \`leads pull\` writes (ndjson, csv) is valid input: the fields the server sets (id, customer_id, created_at, updated_at, status, owner, ...) are ignored, with a note on stderr, and a pulled lead's current_stage gives its stage_slug.

--dry-run checks every row here, with the server's own schema and contact rules, and sends nothing: it spends no rate limit and needs no daemon. It cannot know the customer's stages, custom fields or leads; --dry-run --check-on-server has the server check those too (how many rows would be created, updated or skipped), and counts against the bulk rate limit like a real push.

Reaches the API with --base-url, --token (scope public_api:leads:write) and --customer, else LEADS_BASE_URL, LEADS_API_TOKEN and LEADS_CUSTOMER_ID, else the profile (see leads config). Prints the counts and each failed row by its line; --json adds every row's result (line, status, lead_id). Exits 1 when any row failed.`
  static override examples = [
    '<%= config.bin %> push leads.csv',
    '<%= config.bin %> push leads.csv --dry-run',
    '<%= config.bin %> push leads.ndjson --on-duplicate skip --dry-run --check-on-server',
  ]
  static override args = {
    file: Args.string({description: 'CSV or NDJSON file', required: true}),
  }
  static override flags = {
    ...clientFlags,
    'dry-run': Flags.boolean({description: 'check every row here and send nothing (no rate limit spent)'}),
    'check-on-server': Flags.boolean({
      description: 'with --dry-run: the server checks too (stages, custom fields, matches); counts against the bulk rate limit',
      dependsOn: ['dry-run'],
    }),
    'on-duplicate': Flags.string({description: 'what to do with a row that matches an existing lead', options: [...ON_DUPLICATE], default: 'update'}),
    format: Flags.string({description: 'file format; default: from the extension (a pipe such as /dev/stdin needs it)', options: ['csv', 'ndjson']}),
  }

  async run(): Promise<PushReport | LocalCheckReport> {
    const {args, flags} = await this.parse(Push)
    const format = (flags.format as 'csv' | 'ndjson' | undefined) ?? detectFormat(args.file)
    if (flags['dry-run'] && !flags['check-on-server']) {
      const checked = await checkFile(args.file, format)
      if (!this.jsonEnabled()) this.printCheck(checked)
      if (checked.summary.failed > 0) process.exitCode = 1
      return checked
    }
    // Live progress on stderr only when it is a terminal; stdout keeps the report alone.
    const settings = this.clientSettings(flags)
    const view = process.stderr.isTTY ? await renderPushProgress() : null
    const client = clientFromSettings(settings, {onWait: (wait) => (view ? view.wait(wait) : announceWait(wait))})
    let report: PushReport
    try {
      report = await pushFile(client, {
        file: args.file,
        format,
        // oclif leaves a boolean flag that was not given undefined, which the --json report would drop.
        dryRun: flags['dry-run'] === true,
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

  private printCheck(report: LocalCheckReport): void {
    this.printRows(report)
    const {summary} = report
    this.log(`Dry run, checked here, nothing sent: ${summary.received} rows: ${summary.valid} valid, ${summary.failed} failed`)
    process.stderr.write(
      `not checked without the server: ${report.not_checked.join(', ')} (--check-on-server checks them and counts against the bulk rate limit)\n`,
    )
  }

  /** The note on ignored fields (stderr) and one line per failed row. */
  private printRows(report: {ignored_fields: string[]; failed: Array<{line: number; message: string}>}): void {
    if (report.ignored_fields.length > 0) {
      process.stderr.write(`note: ignored the fields the server sets: ${report.ignored_fields.join(', ')}\n`)
    }
    // A row's message can quote the file and what the server said.
    for (const row of report.failed) this.log(terminalSafe(`line ${row.line}: ${row.message}`))
  }

  private printReport(report: PushReport): void {
    this.printRows(report)
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
