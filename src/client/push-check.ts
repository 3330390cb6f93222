import {readLeadDraft} from '../leads/lead-input.js'
import {type LeadFileFormat, readLeadFile} from './lead-file.js'

/** What a local dry run cannot know: the customer's setup and leads are on the server. */
export const NOT_CHECKED_LOCALLY = ['stage slugs', 'custom fields', 'matches with existing leads']

/** `leads push --dry-run`: every row checked here, nothing sent. */
export interface LocalCheckReport {
  dry_run: true
  checked: 'locally'
  summary: {received: number; valid: number; failed: number}
  failed: Array<{line: number; message: string; param?: string}>
  ignored_fields: string[]
  not_checked: string[]
}

/**
 * Checks every row of a file as the server checks a lead before it reads the customer's setup
 * (the same schema and contact rules, readLeadDraft), without sending anything: a dry run that
 * spends no rate limit and works with the daemon down.
 */
export async function checkFile(file: string, format: LeadFileFormat): Promise<LocalCheckReport> {
  const summary = {received: 0, valid: 0, failed: 0}
  const failed: LocalCheckReport['failed'] = []
  const ignored = new Set<string>()
  for await (const record of readLeadFile(file, format, ignored)) {
    summary.received += 1
    try {
      if (record.error !== undefined) throw new Error(record.error)
      readLeadDraft(record.lead)
      summary.valid += 1
    } catch (error) {
      summary.failed += 1
      const param = (error as {param?: string}).param
      failed.push({line: record.line, message: (error as Error).message, ...(param === undefined ? {} : {param})})
    }
  }
  return {dry_run: true, checked: 'locally', summary, failed, ignored_fields: [...ignored], not_checked: NOT_CHECKED_LOCALLY}
}
