import {stringify} from 'csv-stringify/sync'

import type {Lead} from '../leads/lead-types.js'

/** csv is plain, for programs and `leads push`; csv-excel guards cells a spreadsheet would run as formulas. */
export const PULL_FORMATS = ['ndjson', 'json', 'csv', 'csv-excel'] as const
export type PullFormat = (typeof PULL_FORMATS)[number]

/** The columns every CSV has, before the custom fields' own. */
export const CSV_COLUMNS = [
  'id',
  'customer_id',
  'source_platform',
  'source_type',
  'status',
  'created_at',
  'updated_at',
  'contact_name',
  'contact_phone',
  'contact_email',
  'score',
  'qualified',
  'stage_id',
  'stage_slug',
  'stage_name',
  'owner_id',
  'owner_name',
  'owner_role_name',
  'last_interaction_at',
  'interaction_count',
]

/** The last column: as JSON, a lead's custom fields that have no column of their own (most often empty). */
export const OTHER_CUSTOM_FIELDS_COLUMN = 'custom_fields'

/** The output's reader went away (a closed pipe): the pull stops, saving only what was written. */
export class OutputClosedError extends Error {
  constructor() {
    super('the output was closed by its reader')
  }
}

/**
 * What a spreadsheet would run as a formula: a cell starting with =, +, -, @, tab or carriage
 * return. OWASP's advice for CSV injection is to prefix such a cell with a single quote; names
 * and other fields come from web forms, so any of them may. Only csv-excel does: the quote
 * changes the value for every program that is not a spreadsheet (`+1 555…` phones among them).
 */
/** csv-stringify writes true as 1 and false as an empty cell; push reads true and false. */
const CSV_OPTIONS = {cast: {boolean: (value: boolean) => String(value)}}

const FORMULA_START = /^[=+\-@\t\r]/

function neutraliseCsvCell(value: unknown): unknown {
  return typeof value === 'string' && FORMULA_START.test(value) ? `'${value}` : value
}

type CustomType = 'string' | 'number' | 'boolean'

/** A custom field with a CSV column of its own: `custom_fields.<slug>`, with `:number` or `:boolean` as `leads push` reads it. */
interface CustomColumn {
  slug: string
  type: CustomType
}

function customColumnName(column: CustomColumn): string {
  return `custom_fields.${column.slug}${column.type === 'string' ? '' : `:${column.type}`}`
}

/** The custom fields of the first page's leads, by slug, typed by their first value that is not null. */
function customColumnsOf(leads: readonly Lead[]): CustomColumn[] {
  const types = new Map<string, CustomType | null>()
  for (const lead of leads) {
    for (const [slug, value] of Object.entries(lead.custom_fields ?? {})) {
      if (value === null) {
        if (!types.has(slug)) types.set(slug, null)
      } else if (!types.get(slug)) types.set(slug, typeof value as CustomType)
    }
  }
  return [...types].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([slug, type]) => ({slug, type: type ?? 'string'}))
}

/**
 * Turns pages of leads into text: NDJSON (a lead per line), one JSON array for the whole run, or
 * CSV with a header row that `leads push` reads back: stage and owner flattened, a column
 * `custom_fields.<slug>[:type]` for each custom field the first page holds, the rest as JSON in
 * a last `custom_fields` column; csv-excel also neutralises formula-like cells.
 */
export class LeadWriter {
  private written = 0
  /** Bytes handed to the output so far. */
  bytesWritten = 0
  /** CSV: the custom-field columns, fixed by the first page (the header is written with it). */
  private customColumns: CustomColumn[] | null = null

  /** customFields false (pull --no-custom-fields): the CSV has no custom-field columns, not even an always empty custom_fields. */
  constructor(
    private readonly format: PullFormat,
    private readonly write: (text: string) => Promise<void>,
    private readonly customFields = true,
  ) {}

  async start(): Promise<void> {
    if (this.format === 'json') await this.send('[')
  }

  async page(leads: Lead[]): Promise<void> {
    if (leads.length === 0) return
    let text: string
    if (this.format === 'ndjson') text = leads.map((lead) => JSON.stringify(lead) + '\n').join('')
    else if (this.format === 'json') text = leads.map((lead, i) => (this.written + i === 0 ? '\n' : ',\n') + JSON.stringify(lead)).join('')
    else
      text =
        this.csvHeader(leads) +
        stringify(
          leads.map((lead) => this.csvRow(lead)),
          CSV_OPTIONS,
        )
    this.written += leads.length
    await this.send(text)
  }

  async end(): Promise<void> {
    if (this.format === 'json') await this.send(this.written === 0 ? ']\n' : '\n]\n')
    else if (this.format !== 'ndjson' && this.customColumns === null) await this.send(this.csvHeader([]))
  }

  /** The header row, the first time only. */
  private csvHeader(leads: readonly Lead[]): string {
    if (this.customColumns !== null) return ''
    this.customColumns = this.customFields ? customColumnsOf(leads) : []
    const custom = this.customFields ? [...this.customColumns.map(customColumnName), OTHER_CUSTOM_FIELDS_COLUMN] : []
    return stringify([[...CSV_COLUMNS, ...custom]], CSV_OPTIONS)
  }

  private csvRow(lead: Lead): unknown[] {
    const customFields = {...lead.custom_fields}
    const own = (this.customColumns ?? []).map((column) => {
      const value = customFields[column.slug]
      // A value of another type than its column stays in the JSON column, so push reads it as it was;
      // so do null and "", which an empty cell cannot carry (push reads it as "not given").
      if (value === undefined || value === null || value === '' || typeof value !== column.type) return null
      delete customFields[column.slug]
      return value
    })
    const others = Object.keys(customFields).length > 0 ? JSON.stringify(customFields) : null
    const row = [
      lead.id,
      lead.customer_id,
      lead.source_platform,
      lead.source_type,
      lead.status,
      lead.created_at,
      lead.updated_at,
      lead.contact_name,
      lead.contact_phone,
      lead.contact_email,
      lead.score,
      lead.qualified,
      lead.current_stage.id,
      lead.current_stage.slug,
      lead.current_stage.name,
      lead.owner?.id ?? null,
      lead.owner?.name ?? null,
      lead.owner?.role_name ?? null,
      lead.last_interaction_at,
      lead.interaction_count,
      ...(this.customFields ? [...own, others] : []),
    ]
    return this.format === 'csv-excel' ? row.map(neutraliseCsvCell) : row
  }

  private async send(text: string): Promise<void> {
    await this.write(text)
    this.bytesWritten += Buffer.byteLength(text)
  }
}
