import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'

import {parse} from 'csv-parse'

import {ValidationError} from '../shared/errors.js'

export type LeadFileFormat = 'csv' | 'ndjson'

/** One lead read from a file, with the line it starts on; `error` when the line could not be read. */
export interface FileRecord {
  line: number
  lead?: Record<string, unknown>
  error?: string
}

const CONTACT_COLUMNS = new Set(['contact_name', 'contact_phone', 'contact_email', 'stage_slug', 'source_platform', 'source_type'])
const CUSTOM_COLUMN = /^custom_fields\.([a-z][a-z0-9_]{0,63})(?::(string|number|boolean))?$/

/** The format by extension: .csv is CSV; .ndjson, .jsonl and .json lines are NDJSON. */
export function detectFormat(file: string): LeadFileFormat {
  const extension = path.extname(file).toLowerCase()
  if (extension === '.csv') return 'csv'
  if (['.ndjson', '.jsonl', '.json'].includes(extension)) return 'ndjson'
  throw new ValidationError(`cannot tell the format of ${file}`, 'format', 'pass --format csv or --format ndjson')
}

/** Streams the leads of a CSV (header row) or NDJSON file without loading it whole. */
export async function* readLeadFile(file: string, format: LeadFileFormat): AsyncGenerator<FileRecord> {
  if (!fs.existsSync(file)) throw new ValidationError(`no such file: ${file}`, 'file')
  yield* format === 'csv' ? readCsv(file) : readNdjson(file)
}

async function* readNdjson(file: string): AsyncGenerator<FileRecord> {
  const lines = readline.createInterface({input: fs.createReadStream(file, 'utf8'), crlfDelay: Infinity})
  let line = 0
  for await (const text of lines) {
    line += 1
    if (text.trim() === '') continue
    try {
      const lead = JSON.parse(text) as unknown
      if (lead === null || typeof lead !== 'object' || Array.isArray(lead)) yield {line, error: 'line is not a JSON object'}
      else yield {line, lead: lead as Record<string, unknown>}
    } catch {
      yield {line, error: 'line is not valid JSON'}
    }
  }
}

async function* readCsv(file: string): AsyncGenerator<FileRecord> {
  const parser = fs
    .createReadStream(file)
    .pipe(parse({bom: true, columns: checkHeader, skip_empty_lines: true, trim: true, info: true, relax_column_count: false}))
  try {
    for await (const {record, info} of parser as AsyncIterable<{record: Record<string, string>; info: {lines: number}}>) {
      try {
        yield {line: info.lines, lead: csvRecordToLead(record)}
      } catch (error) {
        yield {line: info.lines, error: (error as Error).message}
      }
    }
  } catch (error) {
    const csvError = error as {code?: string; lines?: number; message: string}
    if (csvError.code?.startsWith('CSV_')) throw new ValidationError(`${file}: ${csvError.message}`, 'file')
    throw error
  }
}

/** Accepts the contact columns and `custom_fields.<slug>[:type]`; anything else stops the push before it starts. */
function checkHeader(header: string[]): string[] {
  for (const column of header) {
    if (!CONTACT_COLUMNS.has(column) && !CUSTOM_COLUMN.test(column)) {
      throw new ValidationError(
        `unknown CSV column "${column}"`,
        'file',
        `use ${[...CONTACT_COLUMNS].join(', ')} or custom_fields.<slug>[:string|number|boolean]`,
      )
    }
  }
  return header
}

function csvRecordToLead(record: Record<string, string>): Record<string, unknown> {
  const lead: Record<string, unknown> = {}
  const customFields: Record<string, unknown> = {}
  for (const [column, cell] of Object.entries(record)) {
    if (cell === '') continue
    const custom = CUSTOM_COLUMN.exec(column)
    if (!custom) {
      lead[column] = cell
      continue
    }
    customFields[custom[1] as string] = typedCell(cell, (custom[2] ?? 'string') as 'string' | 'number' | 'boolean', column)
  }
  if (Object.keys(customFields).length > 0) lead['custom_fields'] = customFields
  return lead
}

function typedCell(cell: string, type: 'string' | 'number' | 'boolean', column: string): unknown {
  if (type === 'string') return cell
  if (type === 'number') {
    const value = Number(cell)
    if (!Number.isFinite(value)) throw new Error(`${column} must be a number, got "${cell}"`)
    return value
  }
  if (cell === 'true' || cell === 'false') return cell === 'true'
  throw new Error(`${column} must be true or false, got "${cell}"`)
}
