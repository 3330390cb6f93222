import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'

import {parse} from 'csv-parse'

import {LEAD_SCHEMA} from '../leads/lead-schemas.js'
import {ValidationError} from '../shared/errors.js'
import {CSV_COLUMNS, OTHER_CUSTOM_FIELDS_COLUMN} from './lead-writer.js'

export type LeadFileFormat = 'csv' | 'ndjson'

/** One lead read from a file, with the line it starts on; `error` when the line could not be read. */
export interface FileRecord {
  line: number
  lead?: Record<string, unknown>
  error?: string
}

const CONTACT_COLUMNS = new Set(['contact_name', 'contact_phone', 'contact_email', 'stage_slug', 'source_platform', 'source_type'])
const CUSTOM_COLUMN = /^custom_fields\.([a-z][a-z0-9_]{0,63})(?::(string|number|boolean))?$/
/** The columns of `leads pull --format csv` that the server sets: read past, and reported once. */
const READ_ONLY_COLUMNS = new Set(CSV_COLUMNS.filter((column) => !CONTACT_COLUMNS.has(column)))
/** The fields of a pulled lead (NDJSON) that the server sets; current_stage gives stage_slug when that is not given. */
const READ_ONLY_FIELDS: ReadonlySet<string> = new Set(LEAD_SCHEMA.required.filter((field) => !CONTACT_COLUMNS.has(field)))

/** The format by extension: .csv is CSV; .ndjson, .jsonl and .json lines are NDJSON. */
export function detectFormat(file: string): LeadFileFormat {
  const extension = path.extname(file).toLowerCase()
  if (extension === '.csv') return 'csv'
  if (['.ndjson', '.jsonl', '.json'].includes(extension)) return 'ndjson'
  throw new ValidationError(`cannot tell the format of ${file}`, 'format', 'pass --format csv or --format ndjson')
}

/**
 * Streams the leads of a CSV (header row) or NDJSON file without loading it whole. What `leads
 * pull` writes reads back: the fields the server sets (id, created_at, …) are left out and
 * added to `ignored`.
 */
export async function* readLeadFile(file: string, format: LeadFileFormat, ignored = new Set<string>()): AsyncGenerator<FileRecord> {
  if (!fs.existsSync(file)) throw new ValidationError(`no such file: ${file}`, 'file')
  checkLooksLike(file, format)
  yield* format === 'csv' ? readCsv(file, ignored) : readNdjson(file, ignored)
}

async function* readNdjson(file: string, ignored: Set<string>): AsyncGenerator<FileRecord> {
  const lines = readline.createInterface({input: fs.createReadStream(file, 'utf8'), crlfDelay: Infinity})
  let line = 0
  for await (const text of lines) {
    line += 1
    if (text.trim() === '') continue
    try {
      const lead = JSON.parse(text) as unknown
      if (lead === null || typeof lead !== 'object' || Array.isArray(lead)) yield {line, error: 'line is not a JSON object'}
      else yield {line, lead: withoutReadOnlyFields(lead as Record<string, unknown>, ignored)}
    } catch {
      yield {line, error: 'line is not valid JSON'}
    }
  }
}

/**
 * Stops a file read in the wrong format before its first row: NDJSON read as CSV would fail as
 * a quote error, and CSV read as NDJSON as one bad line per row. A pipe (`<(leads pull)`,
 * /dev/stdin) is not looked into: it cannot be read twice, and its format came from --format.
 */
function checkLooksLike(file: string, format: LeadFileFormat): void {
  if (!fs.statSync(file).isFile()) return
  const start = Buffer.alloc(512)
  const descriptor = fs.openSync(file, 'r')
  let text: string
  try {
    text = start
      .subarray(0, fs.readSync(descriptor, start, 0, start.length, 0))
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimStart()
  } finally {
    fs.closeSync(descriptor)
  }
  if (text === '') return
  const json = text.startsWith('{') || text.startsWith('[')
  if (format === 'csv' && json) {
    throw new ValidationError(`${file} holds JSON (NDJSON: one lead object per line), not CSV`, 'format', 'pass --format ndjson, or name the file .ndjson')
  }
  if (format === 'ndjson' && text.startsWith('[')) {
    // What `leads pull --format json` writes: read as lines, all but the one-lead case fail.
    throw new ValidationError(
      `${file} holds a JSON array; push reads NDJSON, one lead object per line`,
      'format',
      `pull with --format ndjson, or convert it: jq -c '.[]' ${file}`,
    )
  }
  if (format === 'ndjson' && !json) {
    throw new ValidationError(
      `${file} does not hold NDJSON (one JSON object per line); it looks like CSV`,
      'format',
      'pass --format csv, or name the file .csv',
    )
  }
}

/** A pulled lead as a push row: without what the server sets, its stage by slug. */
function withoutReadOnlyFields(lead: Record<string, unknown>, ignored: Set<string>): Record<string, unknown> {
  const row: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(lead)) {
    if (READ_ONLY_FIELDS.has(field)) ignored.add(field)
    else row[field] = value
  }
  const stage = lead['current_stage'] as {slug?: unknown} | null | undefined
  if (row['stage_slug'] === undefined && typeof stage?.slug === 'string') row['stage_slug'] = stage.slug
  return row
}

async function* readCsv(file: string, ignored: Set<string>): AsyncGenerator<FileRecord> {
  let headerRead = false
  const columns = (header: string[]) => {
    headerRead = true
    checkHeader(header)
    for (const column of header) if (READ_ONLY_COLUMNS.has(column)) ignored.add(column)
    return header
  }
  const parser = fs.createReadStream(file).pipe(parse({bom: true, columns, skip_empty_lines: true, trim: true, info: true, relax_column_count: false}))
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
  // An empty file is not "0 rows": it is most likely not the file meant, or one cut short. What
  // `leads pull --format csv` writes when it finds nothing still has its header, and reads as 0 rows.
  if (!headerRead) {
    throw new ValidationError(
      `${file} has no header line; a CSV must start with one naming its columns`,
      'file',
      'such as contact_name,contact_phone,contact_email; see leads push --help',
    )
  }
}

/**
 * Accepts the contact columns, `custom_fields.<slug>[:type]`, a `custom_fields` column of JSON
 * objects and the read-only columns of `leads pull`; anything else stops the push before it starts.
 */
function checkHeader(header: string[]): void {
  const known = (column: string) =>
    CONTACT_COLUMNS.has(column) || CUSTOM_COLUMN.test(column) || column === OTHER_CUSTOM_FIELDS_COLUMN || READ_ONLY_COLUMNS.has(column)
  const unknown = header.find((column) => !known(column))
  if (unknown === undefined) return
  const accepted = `${[...CONTACT_COLUMNS].join(', ')}, custom_fields.<slug>[:string|number|boolean] or custom_fields (JSON)`
  // No column known at all: most likely a file without a header, whose first row of data was read as one.
  const hint = header.some(known) ? `use ${accepted}` : `the first line must be the header naming the columns: ${accepted}`
  throw new ValidationError(`unknown CSV column "${unknown}"`, 'file', hint)
}

function csvRecordToLead(record: Record<string, string>): Record<string, unknown> {
  const lead: Record<string, unknown> = {}
  const customFields: Record<string, unknown> = {}
  for (const [column, cell] of Object.entries(record)) {
    if (cell === '' || READ_ONLY_COLUMNS.has(column)) continue
    if (column === OTHER_CUSTOM_FIELDS_COLUMN) {
      Object.assign(customFields, jsonObjectCell(cell), {...customFields})
      continue
    }
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

/** The custom_fields column: a JSON object of slug to value; its own columns win over it. */
function jsonObjectCell(cell: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(cell)
  } catch {
    value = null
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${OTHER_CUSTOM_FIELDS_COLUMN} must be a JSON object, got "${cell}"`)
  return value as Record<string, unknown>
}

function typedCell(cell: string, type: 'string' | 'number' | 'boolean', column: string): unknown {
  if (type === 'string') return cell
  if (type === 'number') {
    const value = Number(cell)
    if (!Number.isFinite(value)) throw new Error(`${column} must be a number, got "${cell}"`)
    return value
  }
  // Any case, as spreadsheets write TRUE and FALSE; not yes/no or 1/0, which the API refuses too.
  const word = cell.toLowerCase()
  if (word === 'true' || word === 'false') return word === 'true'
  throw new Error(`${column} must be true or false (any case), got "${cell}"`)
}
