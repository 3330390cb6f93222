/**
 * How commands print: an Ink view on a terminal, plain text otherwise. Ink and React are loaded
 * (views.tsx) only for a view, which keeps every other command's start-up short.
 */
import type {PullProgress as Progress} from '../client/pull.js'
import type {TailEntry} from '../deliveries/delivery-tail.js'
import type {PushSummary} from '../client/push.js'
import type {WebhookInspection} from '../webhooks/webhook-report.js'
import type {SecretOnceProps} from './SecretOnce.js'
import {type Column, formatTsv} from './table-layout.js'
import type {ProgressView} from './views.js'
import {inert} from './terminal-text.js'
import {terminalColumns} from './terminal-width.js'

export type {Column, ProgressView}

/** How a table is shown: on a terminal or not, which columns (--columns), cut to the terminal's width or not (--no-truncate). */
export interface TableDisplay {
  interactive: boolean
  columns?: readonly string[]
  truncate?: boolean
}

/**
 * Prints a table. On a terminal: an Ink view fitted to its width (ids and times whole, free text
 * cut). Into a pipe: tab-separated rows without a header, every value whole, as gh prints them;
 * an empty result prints nothing on stdout and says so on stderr.
 */
export async function renderTable<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[], emptyText: string, display: TableDisplay): Promise<void> {
  if (!display.interactive) {
    const text = formatTsv(columns, rows, display.columns)
    if (rows.length === 0) process.stderr.write(`${emptyText}\n`)
    else process.stdout.write(`${text}\n`)
    return
  }
  const width = display.truncate === false ? undefined : terminalColumns()
  await (await import('./views.js')).showTable(columns, rows, emptyText, width, display.columns)
}

/** Shows a freshly minted secret once: boxed on a terminal, plain lines otherwise. */
export async function renderSecretOnce(props: SecretOnceProps, interactive: boolean): Promise<void> {
  if (!interactive) {
    const lines = [`${props.title}: ${props.secret}`, 'It cannot be shown again.', ...props.details.map(([label, value]) => `${label}: ${value}`)]
    process.stdout.write(`${lines.join('\n')}\n`)
    return
  }
  await (await import('./views.js')).showSecretOnce(props)
}

/** Shows `leads webhooks inspect`: a dashboard on a terminal, plain text otherwise. */
export async function renderWebhookInspection(data: WebhookInspection, interactive: boolean): Promise<void> {
  // The description, URL and receivers' answers come from outside.
  const safe = inert(data)
  if (!interactive) {
    const {formatWebhookInspection} = await import('./webhook-text.js')
    process.stdout.write(`${formatWebhookInspection(safe)}\n`)
    return
  }
  await (await import('./views.js')).showWebhookInspection(safe)
}

/** The live view of `leads deliveries tail` on a terminal. */
export async function renderDeliveryTail(following: string, rows: number): Promise<{show(entries: readonly TailEntry[]): void; done(): void}> {
  return (await import('./views.js')).startDeliveryTail(following, rows)
}

/** A live pull progress line on stderr. */
export async function renderPullProgress(): Promise<ProgressView<Progress>> {
  return (await import('./views.js')).startPullProgress()
}

/** A live push progress line on stderr. */
export async function renderPushProgress(): Promise<ProgressView<PushSummary>> {
  return (await import('./views.js')).startPushProgress()
}
