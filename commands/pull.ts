import {Flags} from '@oclif/core'

import {clientFromConfig} from '../src/client/client-from-config.js'
import {LeadWriter, PULL_FORMATS, type PullFormat} from '../src/client/lead-writer.js'
import {pullLeads, type PullSummary} from '../src/client/pull.js'
import {defaultStateFile} from '../src/client/pull-state.js'
import {loadConfig} from '../src/config/config.js'
import {parseDuration} from '../src/shared/duration.js'
import {ValidationError} from '../src/shared/errors.js'
import {renderPullProgress} from '../src/ui/render.js'
import {BaseCommand} from './_shared/base-command.js'

export default class Pull extends BaseCommand {
  static override description = `Pull the customer's leads incrementally and write them to stdout

Follows next_cursor with sort_by=updated_at&sort_dir=asc. After each page is written the position is saved in the state file, so a run that is killed resumes where it left off and loses no lead; a lead may be written twice (the page in flight when it died, or a lead updated again), so de-duplicate by id and keep the newest updated_at. An existing state file wins over --since.

Reads LEADS_BASE_URL, LEADS_API_TOKEN (scope public_api:leads:read) and LEADS_CUSTOMER_ID. Waits out 429s (Retry-After) and retries transient failures.`
  static override examples = [
    '<%= config.bin %> pull --since 2026-01-01T00:00:00Z > leads.ndjson',
    '<%= config.bin %> pull --follow --interval 1m --state ./acme.state.json >> leads.ndjson',
    '<%= config.bin %> pull --format csv > leads.csv',
  ]
  // The leads are the output: --json would only repeat them.
  static override enableJsonFlag = false
  static override flags = {
    since: Flags.string({description: 'first run only: leads updated at or after this ISO-8601 time'}),
    follow: Flags.boolean({description: 'keep polling for changes until interrupted (Ctrl-C)'}),
    interval: Flags.string({description: 'with --follow: time between polls', default: '30s'}),
    state: Flags.string({description: 'state file; default: one per base URL and customer in the CLI data directory'}),
    format: Flags.string({description: 'output format', options: [...PULL_FORMATS], default: 'ndjson'}),
    'page-size': Flags.integer({description: 'leads per request', default: 100, min: 1, max: 100}),
  }

  async run(): Promise<PullSummary> {
    const {flags} = await this.parse(Pull)
    const format = flags.format as PullFormat
    // A usage error (exit 2): one JSON array per run cannot be kept open by --follow.
    if (flags.follow && format === 'json') this.error('--format json cannot be used with --follow; use --format ndjson', {exit: 2})
    const since = flags.since
    if (since !== undefined && Number.isNaN(Date.parse(since))) throw new ValidationError(`--since must be an ISO-8601 time, got "${since}"`, 'since')
    const config = loadConfig(process.env)
    const client = clientFromConfig(config)
    const baseUrl = config.client.baseUrl as string
    const customerId = config.client.customerId as string

    const interrupted = new AbortController()
    const stop = () => interrupted.abort()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    const view = process.stderr.isTTY ? renderPullProgress() : null
    try {
      return await pullLeads(client, {
        baseUrl,
        customerId,
        stateFile: flags.state ?? defaultStateFile(this.config.dataDir, baseUrl, customerId),
        since,
        pageSize: flags['page-size'],
        follow: flags.follow,
        intervalMs: parseDuration(flags.interval, 'interval'),
        writer: new LeadWriter(format, writeStdout),
        signal: interrupted.signal,
        onProgress: (progress) => view?.update(progress),
      })
    } finally {
      view?.done()
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
    }
  }
}

/** Writes to stdout and waits when the pipe is full, so memory stays flat however slow the reader. */
function writeStdout(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.stdout.write(text)) resolve()
    else process.stdout.once('drain', resolve).once('error', reject)
  })
}
