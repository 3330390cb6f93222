import {randomUUID} from 'node:crypto'

import type {OnDuplicate} from '../leads/bulk-plan.js'
import type {BulkResponse} from '../leads/lead-view.js'
import type {LeadsApiClient} from './api-client.js'
import {type FileRecord, type LeadFileFormat, readLeadFile} from './lead-file.js'

const PUSH_CHUNK_ROWS = 500

interface PushOptions {
  file: string
  format: LeadFileFormat
  dryRun: boolean
  onDuplicate: OnDuplicate
  /** Called after each chunk with the running totals. */
  onProgress?: (summary: PushSummary) => void
  sleep?: (ms: number) => Promise<void>
}

export interface PushSummary {
  received: number
  created: number
  updated: number
  skipped: number
  failed: number
  chunks: number
}

interface FailedRow {
  line: number
  message: string
  param?: string
}

/** A row's result, by its line in the file: what the bulk endpoint did with it, and its lead. */
interface RowResult {
  line: number
  status: 'created' | 'updated' | 'skipped' | 'failed'
  lead_id?: string
}

export interface PushReport {
  dry_run: boolean
  summary: PushSummary
  /** Every row, in file order (failed ones with their reason in `failed`). */
  results: RowResult[]
  failed: FailedRow[]
  unknown_custom_fields: Array<{slug: string; lines: number[]}>
  /** Fields or columns the server sets (as `leads pull` writes them), left out of every row. */
  ignored_fields: string[]
}

/**
 * Sends a CSV or NDJSON file through the bulk endpoint in chunks of 500, streaming it. Each chunk
 * carries its own Idempotency-Key, so a retried chunk is applied once. When the bulk bucket is
 * empty it waits for the window to reset rather than collecting 429s.
 */
export async function pushFile(client: LeadsApiClient, options: PushOptions): Promise<PushReport> {
  const sleep = options.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms)))
  const summary: PushSummary = {received: 0, created: 0, updated: 0, skipped: 0, failed: 0, chunks: 0}
  const failed: FailedRow[] = []
  const results: RowResult[] = []
  const unknown = new Map<string, number[]>()
  let chunk: Array<Required<Pick<FileRecord, 'line' | 'lead'>>> = []
  let waitBeforeNextMs = 0

  const send = async () => {
    if (chunk.length === 0) return
    if (waitBeforeNextMs > 0) await sleep(waitBeforeNextMs)
    const body = {leads: chunk.map((row) => row.lead), dry_run: options.dryRun, on_duplicate: options.onDuplicate}
    const {body: response, rateLimit} = await client.bulkCreate(body, randomUUID())
    collect(
      response,
      chunk.map((row) => row.line),
    )
    waitBeforeNextMs = rateLimit && rateLimit.remaining <= 0 ? rateLimit.resetSeconds * 1000 : 0
    summary.chunks += 1
    chunk = []
    options.onProgress?.({...summary})
  }

  const collect = (response: BulkResponse, lines: number[]) => {
    summary.received += response.summary.received
    summary.created += response.summary.created
    summary.updated += response.summary.updated
    summary.skipped += response.summary.skipped
    summary.failed += response.summary.failed
    for (const result of response.results) {
      const line = lines[result.index] as number
      results.push({line, status: result.status, ...(result.lead_id === undefined ? {} : {lead_id: result.lead_id})})
      if (result.status === 'failed') failed.push({line, message: result.error?.message ?? 'failed', param: result.error?.param})
    }
    for (const {slug, rows} of response.unknown_custom_fields) {
      unknown.set(slug, [...(unknown.get(slug) ?? []), ...rows.map((row) => lines[row] as number)])
    }
  }

  const ignored = new Set<string>()
  for await (const record of readLeadFile(options.file, options.format, ignored)) {
    if (record.error !== undefined || record.lead === undefined) {
      summary.received += 1
      summary.failed += 1
      results.push({line: record.line, status: 'failed'})
      failed.push({line: record.line, message: record.error ?? 'unreadable line'})
      continue
    }
    chunk.push({line: record.line, lead: record.lead})
    if (chunk.length === PUSH_CHUNK_ROWS) await send()
  }
  await send()
  failed.sort((a, b) => a.line - b.line)
  results.sort((a, b) => a.line - b.line)
  return {
    dry_run: options.dryRun,
    summary,
    results,
    failed,
    unknown_custom_fields: [...unknown].map(([slug, lines]) => ({slug, lines})),
    ignored_fields: [...ignored],
  }
}
