import fs from 'node:fs'

import {Flags} from '@oclif/core'

import {clientFromSettings} from '../src/client/api-client.js'
import {requireClientSettings} from '../src/client/client-settings.js'
import {LeadWriter, OutputClosedError, PULL_FORMATS, type PullFormat} from '../src/client/lead-writer.js'
import {pullLeads, type PullStart, type PullSummary} from '../src/client/pull.js'
import {defaultStateFile, resetState} from '../src/client/pull-state.js'
import {parseDuration, parseSince} from '../src/shared/duration.js'
import {ValidationError} from '../src/shared/errors.js'
import {renderPullProgress} from '../src/ui/render.js'
import {announceWait, BaseCommand, clientFlags} from './_shared/base-command.js'

export default class Pull extends BaseCommand {
  static override description = `Pull the customer's leads incrementally and write them to stdout

Syncs on the change feed (GET /leads?sync=true): every committed create, merge and bulk upsert comes once, in commit order, and with ndjson a run with nothing changed writes nothing (json and csv write a whole document per run). After each page is written and flushed, the server's position is saved in the state file, so a run that is killed, or whose reader closes the pipe (| head), resumes after the last page written without losing a lead. A lead changed again comes again, so keep the newest copy per id.

The state file (default: one per base URL and customer in the CLI data directory) wins over --since; the run says on stderr where it resumes. --reset starts over, --no-state keeps no position at all.

--format csv is plain CSV that \`leads push\` reads back, one whole file per run: its header, then the leads (the header alone when nothing changed), so append runs with ndjson, not csv. It has a column custom_fields.<slug> (with :number or :boolean) for each custom field found on the first page, the others (and a null or empty value, which an empty cell would lose) as JSON in a last custom_fields column (with --no-custom-fields, none of these columns); push ignores the read-only columns (id, created_at, ...). --format csv-excel is for spreadsheets: it also neutralises cells that start with =, +, -, @, tab or carriage return with a leading single quote (OWASP's advice against formula injection), so a lead named "=HYPERLINK(...)" stays text, at the price of values a program reads as changed ('+1 555...).

Reaches the API with --base-url, --token (scope public_api:leads:read) and --customer, else LEADS_BASE_URL, LEADS_API_TOKEN and LEADS_CUSTOMER_ID, else the profile (see leads config). Waits out 429s (Retry-After) and retries transient failures; a daemon that cannot be reached fails within a few seconds. Ctrl-C or SIGTERM stops it at once, during such a wait too, keeping the position of the last page written.`
  static override examples = [
    '<%= config.bin %> pull --since 2026-01-01T00:00:00Z > leads.ndjson',
    '<%= config.bin %> pull --follow --interval 1m --state ./acme.state.json >> leads.ndjson',
    '<%= config.bin %> pull --format csv > leads.csv',
    '<%= config.bin %> pull --no-state --format csv-excel > leads-for-a-spreadsheet.csv',
    '<%= config.bin %> pull --reset --since 2026-06-01T00:00:00Z > june.ndjson',
  ]
  // The leads are the output: --json would only repeat them.
  static override enableJsonFlag = false
  static override flags = {
    ...clientFlags,
    since: Flags.string({
      description:
        'where a run without a saved position starts: leads updated at or after this ISO-8601 time (2026-06-01, 2026-06-01T09:00:00Z), or a duration ago (2h, 1d)',
    }),
    follow: Flags.boolean({description: 'keep polling for changes until interrupted (Ctrl-C)'}),
    interval: Flags.string({description: 'with --follow: time between polls (at least 1s)', default: '30s'}),
    state: Flags.string({description: 'state file; default: one per base URL and customer in the CLI data directory', exclusive: ['no-state']}),
    'no-state': Flags.boolean({description: 'neither read nor save a position: pull from --since (or everything) once'}),
    // Not `exclusive`: oclif's usage line would show the pair as `[--reset | ]` beside --state's own.
    reset: Flags.boolean({description: 'forget the saved position and start over (from --since, or everything)'}),
    'custom-fields': Flags.boolean({description: "include each lead's custom_fields", default: true, allowNo: true}),
    format: Flags.string({
      description: 'output format: csv is plain (push reads it back), csv-excel guards spreadsheet formulas',
      options: [...PULL_FORMATS],
      default: 'ndjson',
    }),
    'page-size': Flags.integer({description: 'leads per request', default: 100, min: 1, max: 100}),
  }

  async run(): Promise<PullSummary> {
    const {flags, metadata} = await this.parse(Pull)
    const format = flags.format as PullFormat
    // A usage error (exit 2): one JSON array per run cannot be kept open by --follow.
    if (flags.follow && format === 'json') this.error('--format json cannot be used with --follow; use --format ndjson', {exit: 2})
    // Checked here, not with oclif's dependsOn, which would also refuse the default and print several lines.
    if (!flags.follow && !metadata.flags.interval?.setFromDefault) this.error('--interval only applies with --follow; add --follow to keep polling', {exit: 2})
    if (flags.reset && flags['no-state']) this.error('--reset cannot be used with --no-state, which keeps no position to reset', {exit: 2})
    // Read here, as the server's date-time rule is stricter than Date.parse: a --since it would refuse must fail before --reset drops the position.
    const since = flags.since === undefined ? undefined : new Date(parseSince(flags.since, 'since', Date.now())).toISOString()
    const intervalMs = parseDuration(flags.interval, 'interval')
    if (intervalMs < MIN_INTERVAL_MS) throw new ValidationError('--interval must be at least 1s', 'interval')
    const settings = requireClientSettings(this.clientSettings(flags))
    // Not when the leads go to the same terminal: each redraw of the view erases the line above it, a lead's.
    const view = process.stderr.isTTY && !process.stdout.isTTY ? await renderPullProgress() : null
    // Ctrl-C or SIGTERM stops the run at once, a wait for a rate limit included; what was written stays saved.
    const interrupted = new AbortController()
    const client = clientFromSettings(settings, {onWait: (wait) => (view ? view.wait(wait) : announceWait(wait)), signal: interrupted.signal})
    const {baseUrl, customerId} = settings
    const stateFile = flags['no-state'] ? null : (flags.state ?? defaultStateFile(this.config.dataDir, baseUrl, customerId))
    if (flags.reset && stateFile !== null) resetState(stateFile)

    const stop = () => interrupted.abort()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    // A closed pipe is reported through the write callbacks; without a listener it would crash the process.
    const ignoreStdoutErrors = () => undefined
    process.stdout.on('error', ignoreStdoutErrors)
    try {
      return await pullLeads(client, {
        baseUrl,
        customerId,
        stateFile,
        since,
        pageSize: flags['page-size'],
        includeCustomFields: flags['custom-fields'],
        follow: flags.follow,
        intervalMs,
        writer: new LeadWriter(format, writeStdout, flags['custom-fields']),
        unreadOutputBytes: stdoutIsPipe() ? PIPE_CAPACITY_BYTES : 0,
        signal: interrupted.signal,
        onStart: (start) => this.announce(start, stateFile),
        onProgress: (progress) => view?.update(progress),
      })
    } finally {
      view?.done()
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      process.stdout.off('error', ignoreStdoutErrors)
    }
  }

  /** Says on stderr where the run starts, so the implicit state file is never a surprise. */
  private announce(start: PullStart, stateFile: string | null): void {
    if (start.resumed === null) return
    const from = start.convertedFrom ? `updated_since ${start.convertedFrom} (converted from an older state file)` : 'the saved position'
    process.stderr.write(`resuming from ${stateFile} at ${from}, ${start.resumed.leads_pulled} leads pulled so far; --reset starts over\n`)
    if (start.sinceIgnored) process.stderr.write('warning: --since is ignored because the state file has a position; add --reset to start at --since\n')
  }
}

/** A Linux pipe's default capacity: what a reader that stops early may leave unread. */
const PIPE_CAPACITY_BYTES = 64 * 1024

function stdoutIsPipe(): boolean {
  try {
    const stat = fs.fstatSync(1)
    return stat.isFIFO() || stat.isSocket()
  } catch {
    return false
  }
}

/** --follow polls no more often than this. */
const MIN_INTERVAL_MS = 1000

/**
 * Writes to stdout and resolves once the text is handed to the OS, so a position is saved only
 * after its page is out, and memory stays flat however slow the reader. A closed pipe (EPIPE)
 * becomes OutputClosedError, which ends the pull quietly.
 */
function writeStdout(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.stdout.destroyed || process.stdout.writableEnded) return reject(new OutputClosedError())
    process.stdout.write(text, (error) => {
      if (!error) return resolve()
      reject((error as NodeJS.ErrnoException).code === 'EPIPE' ? new OutputClosedError() : error)
    })
  })
}
