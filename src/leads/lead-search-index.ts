import type {CustomersStore} from '../customers/customers-store.js'
import {type Db, isMysql, rowsPerInsert} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {compile, insertChunks, type Statement} from '../db/statements.js'
import {leadWords} from './lead-search-terms.js'
import type {LeadRecord, LeadWrite} from './lead-types.js'

/**
 * The rows of `lead_search_words` (lead-search-store.ts reads them): one per distinct word of a
 * lead's name and email before the @, each carrying the lead's status, stage_id and lead_line
 * and all its words, written with the leads in their own transaction.
 */

/** Keeps `lead_search_words` in step with the leads, inside the write's transaction. */
export class LeadSearchIndex {
  constructor(
    private readonly db: Db,
    private readonly customers: CustomersStore,
  ) {}

  /**
   * The statements that replace the word rows of written leads whose words or filters changed:
   * the old rows deleted by key, the new ones inserted, in two statements for the whole write.
   */
  apply(changes: readonly LeadWrite[]): Statement[] {
    const added: WordRow[] = []
    const removed: Array<[customerId: string, word: string, leadId: string]> = []
    for (const {before, after} of changes) {
      if (before !== null && !searchChanged(before, after)) continue
      for (const word of before === null ? [] : leadWords(before)) removed.push([before!.customerId, word, before!.id])
      added.push(...wordRows(after))
    }
    const statements: Statement[] = []
    for (let start = 0; start < removed.length; start += 200) {
      // Expanded ORs of whole keys: MariaDB reads a row constructor IN (…) as a scan of the table
      // (every word of the customer examined and locked per merge), these as key lookups.
      const query = this.db('lead_search_words')
      for (const [customerId, word, leadId] of removed.slice(start, start + 200)) query.orWhere({customer_id: customerId, word, lead_id: leadId})
      statements.push(compile(query.delete()))
    }
    return [...statements, ...insertChunks(this.db, 'lead_search_words', added)]
  }

  /**
   * Rebuilds the words of one customer's leads, or every customer's, from their names and
   * emails; for data written around the service. Returns how many leads it indexed. Each batch
   * of leads is read locked (MySQL) while its words are replaced, so a concurrent write is
   * never undone.
   */
  async rebuild(customerId?: string): Promise<number> {
    const customers = customerId === undefined ? await this.customers.customerIds() : [customerId]
    let indexed = 0
    for (const id of customers) {
      for (let after = ''; ;) {
        const batch = await inTransaction(this.db, async (trx) => {
          const query = trx('leads')
            .where('customer_id', id)
            .andWhere('id', '>', after)
            .orderBy('id')
            .limit(REBUILD_BATCH)
            .select('id', 'contact_name', 'contact_email', 'status', 'stage_id', 'lead_line')
          if (isMysql(this.db)) query.forShare()
          const leads = (await query) as StoredLead[]
          if (leads.length === 0) return leads
          await trx('lead_search_words')
            .where('customer_id', id)
            .whereIn(
              'lead_id',
              leads.map((lead) => lead.id),
            )
            .delete()
          const rows = leads.flatMap((lead) => {
            const stored = {id: lead.id, customerId: id, contactName: lead.contact_name, contactEmail: lead.contact_email}
            const filters = {status: lead.status, stageId: lead.stage_id, leadLine: lead.lead_line}
            return wordRows({...stored, ...filters})
          })
          const chunk = rowsPerInsert(this.db)
          for (let start = 0; start < rows.length; start += chunk) await trx('lead_search_words').insert(rows.slice(start, start + chunk))
          return leads
        })
        if (batch.length === 0) break
        indexed += batch.length
        after = batch.at(-1)!.id
      }
    }
    return indexed
  }
}

const REBUILD_BATCH = 1000

type StoredLead = {
  id: string
  contact_name: string | null
  contact_email: string | null
  status: string
  stage_id: string
  lead_line: string | null
}
/** What a lead's word rows are made of (a LeadRecord is one). */
type SearchedLead = {
  id: string
  customerId: string
  contactName: string | null
  contactEmail: string | null
  status: string
  stageId: string
  leadLine: string | null
}
type WordRow = {customer_id: string; word: string; lead_id: string; status: string; stage_id: string; lead_line: string | null; words: string}

/** The rows of a lead in lead_search_words: one per word, each with the lead's filters and all its words. */
function wordRows(lead: SearchedLead): WordRow[] {
  const words = leadWords(lead)
  const all = words.map((word) => ` ${word}`).join('')
  return words.map((word) => ({
    customer_id: lead.customerId,
    word,
    lead_id: lead.id,
    status: lead.status,
    stage_id: lead.stageId,
    lead_line: lead.leadLine,
    words: all,
  }))
}

/** Whether a write changed what a lead's word rows hold. */
function searchChanged(before: LeadRecord, after: LeadRecord): boolean {
  return (
    before.contactName !== after.contactName ||
    before.contactEmail !== after.contactEmail ||
    before.status !== after.status ||
    before.stageId !== after.stageId ||
    before.leadLine !== after.leadLine
  )
}
