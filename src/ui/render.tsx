import {render} from 'ink'

import type {ApiWait} from '../client/api-client.js'
import type {PullProgress as Progress} from '../client/pull.js'
import type {PushSummary} from '../client/push.js'
import type {WebhookInspection} from '../webhooks/webhook-report.js'
import {PullProgress} from './PullProgress.js'
import {PushProgress} from './PushProgress.js'
import {SecretOnce, type SecretOnceProps} from './SecretOnce.js'
import {Table} from './Table.js'
import {type Column, formatTable} from './table-layout.js'
import {formatWebhookInspection, WebhookDashboard} from './WebhookDashboard.js'

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

/** A live progress line on stderr; returns the function that updates it and the one that ends it. */
export function renderPullProgress(): {update(progress: Progress): void; wait(wait: ApiWait): void; done(): void} {
  let latest: Progress = {pages: 0, leads: 0, rateLimit: null, position: null, caughtUp: false}
  const instance = render(<PullProgress progress={latest} />, {stdout: process.stderr, patchConsole: false})
  return {
    // A page arriving ends any wait.
    update: (progress) => instance.rerender(<PullProgress progress={(latest = progress)} />),
    wait: (wait) => instance.rerender(<PullProgress progress={latest} waiting={{reason: wait.reason, until: Date.now() + wait.waitMs}} />),
    done: () => instance.unmount(),
  }
}

/** A live push progress line on stderr. */
export function renderPushProgress(): {update(summary: PushSummary): void; wait(wait: ApiWait): void; done(): void} {
  let latest: PushSummary = {received: 0, created: 0, updated: 0, skipped: 0, failed: 0, chunks: 0}
  const instance = render(<PushProgress summary={latest} waiting={null} />, {stdout: process.stderr, patchConsole: false})
  return {
    update: (summary) => instance.rerender(<PushProgress summary={(latest = summary)} waiting={null} />),
    wait: (wait) => instance.rerender(<PushProgress summary={latest} waiting={{reason: wait.reason, until: Date.now() + wait.waitMs}} />),
    done: () => instance.unmount(),
  }
}

async function renderOnce(element: React.ReactElement): Promise<void> {
  const instance = render(element)
  instance.unmount()
  await instance.waitUntilExit()
}
