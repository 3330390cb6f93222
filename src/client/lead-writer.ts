import {stringify} from 'csv-stringify/sync'

import type {Lead} from '../leads/lead-types.js'

export const PULL_FORMATS = ['ndjson', 'json', 'csv'] as const
export type PullFormat = (typeof PULL_FORMATS)[number]

const CSV_COLUMNS = [
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
  'custom_fields',
]

/** The output's reader went away (a closed pipe): the pull stops, saving only what was written. */
export class OutputClosedError extends Error {
  constructor() {
    super('the output was closed by its reader')
  }
}

/**
 * What a spreadsheet would run as a formula: a cell starting with =, +, -, @, tab or carriage
 * return. OWASP's advice for CSV injection is to prefix such a cell with a single quote; names
 * and other fields come from web forms, so any of them may.
 */
const FORMULA_START = /^[=+\-@\t\r]/

function neutraliseCsvCell(value: unknown): unknown {
  return typeof value === 'string' && FORMULA_START.test(value) ? `'${value}` : value
}

/**
 * Turns pages of leads into text: NDJSON (a lead per line), one JSON array for the whole run, or
 * CSV with a header row (stage and owner flattened, custom_fields as JSON, formula-like cells
 * neutralised with a leading single quote).
 */
export class LeadWriter {
  private written = 0
  /** Bytes handed to the output so far. */
  bytesWritten = 0

  constructor(
    private readonly format: PullFormat,
    private readonly write: (text: string) => Promise<void>,
  ) {}

  async start(): Promise<void> {
    if (this.format === 'json') await this.send('[')
    if (this.format === 'csv') await this.send(stringify([CSV_COLUMNS]))
  }

  async page(leads: Lead[]): Promise<void> {
    if (leads.length === 0) return
    let text: string
    if (this.format === 'ndjson') text = leads.map((lead) => JSON.stringify(lead) + '\n').join('')
    else if (this.format === 'json') text = leads.map((lead, i) => (this.written + i === 0 ? '\n' : ',\n') + JSON.stringify(lead)).join('')
    else text = stringify(leads.map(csvRow))
    this.written += leads.length
    await this.send(text)
  }

  async end(): Promise<void> {
    if (this.format === 'json') await this.send(this.written === 0 ? ']\n' : '\n]\n')
  }

  private async send(text: string): Promise<void> {
    await this.write(text)
    this.bytesWritten += Buffer.byteLength(text)
  }
}

function csvRow(lead: Lead): unknown[] {
  return [
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
    JSON.stringify(lead.custom_fields ?? {}),
  ].map(neutraliseCsvCell)
}
