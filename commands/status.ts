import {statusReport, type StatusReport} from '../src/status/status-report.js'
import {loadConfig} from '../src/config/config.js'
import {terminalSafe} from '../src/ui/terminal-text.js'
import {BaseCommand, clientFlags} from './_shared/base-command.js'

const MARKS = {true: '✓', false: '✗', null: '-'} as const

export default class Status extends BaseCommand {
  static override description =
    'Which database, master key, Redis and daemon the commands use, and whether each answers (on a Galera cluster, which nodes the daemons write through); for the client settings, which key and customer the token is, its scopes and rate-limit budget'
  static override examples = [
    '<%= config.bin %> status',
    'LEADS_BASE_URL=http://127.0.0.1:8080 LEADS_API_TOKEN=svc_... LEADS_CUSTOMER_ID=... <%= config.bin %> status',
    '<%= config.bin %> status --json',
  ]

  static override flags = {...clientFlags}

  async run(): Promise<StatusReport> {
    const {flags} = await this.parse(Status)
    const report = await statusReport(loadConfig(process.env), process.cwd(), this.clientSettings(flags))
    for (const {check, ok, summary, hint} of report.checks) {
      this.log(`${MARKS[String(ok) as keyof typeof MARKS]} ${check.padEnd(10)} ${terminalSafe(summary)}${hint ? `\n  ${' '.repeat(11)}hint: ${hint}` : ''}`)
    }
    // Like a doctor: anything configured that fails makes the exit code 1.
    if (!report.ok) process.exitCode = 1
    return report
  }
}
