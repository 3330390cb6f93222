/**
 * How commands print: an Ink view on a terminal, plain text otherwise. Ink and React are loaded
 * (views.tsx) only for a view, which keeps every other command's start-up short.
 */
import type {PullProgress as Progress} from '../client/pull.js'
import type {PushSummary} from '../client/push.js'
import type {WebhookInspection} from '../webhooks/webhook-report.js'
import type {SecretOnceProps} from './SecretOnce.js'
import {type Column, formatTable} from './table-layout.js'
import type {ProgressView} from './views.js'
import {formatWebhookInspection} from './webhook-text.js'

export type {Column, ProgressView}

/** Prints a table: an Ink view on a terminal, aligned plain text otherwise. */
export async function renderTable<Row>(
  columns: ReadonlyArray<Column<Row>>,
  rows: readonly Row[],
  emptyText: string,
  interactive: boolean,
): Promise<void> {
  if (!interactive) {
    process.stdout.write(rows.length === 0 ? `${emptyText}\n` : `${formatTable(columns, rows)}\n`)
    return
  }
  await (await import('./views.js')).showTable(columns, rows, emptyText)
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
  if (!interactive) {
    process.stdout.write(`${formatWebhookInspection(data)}\n`)
    return
  }
  await (await import('./views.js')).showWebhookInspection(data)
}

/** A live pull progress line on stderr. */
export async function renderPullProgress(): Promise<ProgressView<Progress>> {
  return (await import('./views.js')).startPullProgress()
}

/** A live push progress line on stderr. */
export async function renderPushProgress(): Promise<ProgressView<PushSummary>> {
  return (await import('./views.js')).startPushProgress()
}
