/**
 * The Ink half of the output helpers (render.ts): imported only when a terminal shows a view, so
 * commands that print plain text, JSON or nothing never load Ink and React.
 */
import {render, renderToString} from 'ink'

import type {ApiWait} from '../client/api-client.js'
import type {TailEntry} from '../deliveries/delivery-tail.js'
import {DeliveryTailView} from './DeliveryTailView.js'
import type {PullProgress as Progress} from '../client/pull.js'
import type {PushSummary} from '../client/push.js'
import type {WebhookInspection} from '../webhooks/webhook-report.js'
import {PullProgress} from './PullProgress.js'
import {PushProgress} from './PushProgress.js'
import {SecretOnce, type SecretOnceProps} from './SecretOnce.js'
import {Table} from './Table.js'
import {countTail, NO_COUNTS, type TailCounts} from './tail-line.js'
import type {Column} from './table-layout.js'
import {WebhookDashboard} from './WebhookDashboard.js'
import {terminalColumns} from './terminal-width.js'

/** A live progress view on stderr: update it, show a wait, end it. */
export interface ProgressView<T> {
  update(value: T): void
  wait(wait: ApiWait): void
  done(): void
}

export function showTable<Row>(
  columns: ReadonlyArray<Column<Row>>,
  rows: readonly Row[],
  emptyText: string,
  width?: number,
  columnNames?: readonly string[],
): Promise<void> {
  return renderOnce(<Table columns={columns} rows={rows} emptyText={emptyText} width={width} columnNames={columnNames} />)
}

export function showSecretOnce(props: SecretOnceProps): Promise<void> {
  return renderOnce(<SecretOnce {...props} />)
}

export function showWebhookInspection(data: WebhookInspection): Promise<void> {
  return renderOnce(<WebhookDashboard data={data} />)
}

export function startPullProgress(): ProgressView<Progress> {
  let latest: Progress = {pages: 0, leads: 0, rateLimit: null, position: null, caughtUp: false}
  const instance = render(<PullProgress progress={latest} />, {stdout: process.stderr, patchConsole: false})
  return {
    // A page arriving ends any wait.
    update: (progress) => instance.rerender(<PullProgress progress={(latest = progress)} />),
    wait: (wait) => instance.rerender(<PullProgress progress={latest} waiting={{reason: wait.reason, until: Date.now() + wait.waitMs}} />),
    done: () => instance.unmount(),
  }
}

export function startPushProgress(): ProgressView<PushSummary> {
  let latest: PushSummary = {received: 0, created: 0, updated: 0, skipped: 0, failed: 0, chunks: 0}
  const instance = render(<PushProgress summary={latest} waiting={null} />, {stdout: process.stderr, patchConsole: false})
  return {
    update: (summary) => instance.rerender(<PushProgress summary={(latest = summary)} waiting={null} />),
    wait: (wait) => instance.rerender(<PushProgress summary={latest} waiting={{reason: wait.reason, until: Date.now() + wait.waitMs}} />),
    done: () => instance.unmount(),
  }
}

/** `leads deliveries tail` on a terminal: show(entries) adds what the last poll found; the latest `rows` stay on screen. */
export function startDeliveryTail(following: string, rows: number): {show(entries: readonly TailEntry[]): void; done(): void} {
  let latest: TailEntry[] = []
  let counts: TailCounts = NO_COUNTS
  const instance = render(<DeliveryTailView entries={latest} counts={counts} following={following} />, {patchConsole: false})
  return {
    show: (entries) => {
      if (entries.length === 0) return
      latest = [...latest, ...entries].slice(-rows)
      counts = countTail(counts, entries)
      instance.rerender(<DeliveryTailView entries={latest} counts={counts} following={following} />)
    },
    done: () => instance.unmount(),
  }
}

/**
 * Prints a view that never changes as text. Not through render(): Ink treats output as tall as
 * the terminal as full-screen and clears the screen and its scrollback to redraw it.
 */
async function renderOnce(element: React.ReactElement): Promise<void> {
  const text = renderToString(element, {columns: terminalColumns()})
  await new Promise<void>((resolve) => process.stdout.write(`${text}\n`, () => resolve()))
}
