import {render} from 'ink'

import {SecretOnce, type SecretOnceProps} from './SecretOnce.js'
import {Table} from './Table.js'
import type {WebhookInspection} from '../webhooks/webhook-report.js'
import {formatWebhookInspection, WebhookDashboard} from './WebhookDashboard.js'
import {type Column, formatTable} from './table-layout.js'

export type {Column}

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
  await renderOnce(<Table columns={columns} rows={rows} emptyText={emptyText} />)
}

/** Shows a freshly minted secret once: boxed on a terminal, plain lines otherwise. */
export async function renderSecretOnce(props: SecretOnceProps, interactive: boolean): Promise<void> {
  if (!interactive) {
    const lines = [`${props.title}: ${props.secret}`, 'It cannot be shown again.', ...props.details.map(([label, value]) => `${label}: ${value}`)]
    process.stdout.write(`${lines.join('\n')}\n`)
    return
  }
  await renderOnce(<SecretOnce {...props} />)
}

/** Shows `leads webhooks inspect`: a dashboard on a terminal, plain text otherwise. */
export async function renderWebhookInspection(data: WebhookInspection, interactive: boolean): Promise<void> {
  if (!interactive) {
    process.stdout.write(`${formatWebhookInspection(data)}\n`)
    return
  }
  await renderOnce(<WebhookDashboard data={data} />)
}

async function renderOnce(element: React.ReactElement): Promise<void> {
  const instance = render(element)
  instance.unmount()
  await instance.waitUntilExit()
}
