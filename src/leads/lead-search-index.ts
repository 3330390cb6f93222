import type {CustomersStore} from '../customers/customers-store.js'
import {type Db, isMysql, statementBudget} from '../db/knex.js'
import {inTransaction} from '../db/transaction.js'
import {compile, escapedBytes, insertChunks, runEach, type Statement, statementBytes} from '../db/statements.js'
import {LEAD_WORDS_MAX_LENGTH, leadWords, WORD_MAX_LENGTH} from './lead-search-terms.js'
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
    const added: SearchedLead[] = []
    const removed: Array<[customerId: string, word: string, leadId: string]> = []
    for (const {before, after} of changes) {
      if (before !== null && !searchChanged(before, after)) continue
      for (const word of before === null ? [] : leadWords(before)) removed.push([before!.customerId, word, before!.id])
      added.push(after)
    }
    const statements: Statement[] = []
    for (let start = 0; start < removed.length; start += 200) {
      // Expanded ORs of whole keys: MariaDB reads a row constructor IN (…) as a scan of the table
      // (every word of the customer examined and locked per merge), these as key lookups.
      const query = this.db('lead_search_words')
      for (const [customerId, word, leadId] of removed.slice(start, start + 200)) query.orWhere({customer_id: customerId, word, lead_id: leadId})
      statements.push(compile(query.delete()))
    }
    return [...statements, ...this.insertWords(added)]
  }

  /**
   * The statements that insert the word rows of `leads`, grouped by customer and filter values
   * (status, stage_id, lead_line: a bulk's leads usually share them). A lead alone in its group
   * goes as plain rows (wordRows); several go as one JSON document (wordDocuments), which the
   * database turns into one row per word (docs/design.md, "Search words go as one JSON document").
   */
  private insertWords(leads: readonly SearchedLead[]): Statement[] {
    const groups = new Map<string, SearchedLead[]>()
    for (const lead of leads) {
      const key = JSON.stringify([lead.customerId, lead.status, lead.stageId, lead.leadLine])
      const group = groups.get(key)
      if (group) group.push(lead)
      else groups.set(key, [lead])
    }
    return [...groups.values()].flatMap((group) => (group.length === 1 ? this.wordRows(group[0]!) : this.wordDocuments(group)))
  }

  /**
   * One lead's word rows as a multi-row INSERT: for a lone create, the table function costs the
   * database more than the few rows it saves writing out.
   */
  private wordRows(lead: SearchedLead): Statement[] {
    const words = leadWords(lead)
    const text = wordsText(words)
    const rows = words.map((word) => ({
      customer_id: lead.customerId,
      status: lead.status,
      stage_id: lead.stageId,
      lead_line: lead.leadLine,
      word,
      lead_id: lead.id,
      words: text,
    }))
    return rows.length === 0 ? [] : insertChunks(this.db, 'lead_search_words', rows)
  }

  /**
   * The word rows of leads sharing a customer and filter values, in as few statements as fit in
   * statementBudget: the filter values are bindings, and each lead's id and words go in one JSON
   * document (wordRowsSql). Written as a multi-row INSERT, each row would repeat its lead's id,
   * filters and words, and MariaDB's time to read the statement grows with its text; read from
   * the document, a lead's members are read again for each of its words.
   */
  private wordDocuments(group: readonly SearchedLead[]): Statement[] {
    const sql = wordRowsSql(this.db)
    const budget = statementBudget(this.db)
    const {customerId, status, stageId, leadLine} = group[0]!
    const bindingsOf = (document: string) => [customerId, status, stageId, leadLine, document]
    // Counted as statementBytes counts the statement: each lead's part and its comma, escaped.
    const empty = statementBytes({sql, bindings: bindingsOf('[]')})
    const statements: Statement[] = []
    let parts: string[] = []
    let bytes = empty
    const flush = () => {
      if (parts.length > 0) statements.push({sql, bindings: bindingsOf(`[${parts.join(',')}]`)})
      parts = []
      bytes = empty
    }
    for (const lead of group) {
      const words = leadWords(lead)
      // A lead without words has no rows (JSON_TABLE would give it one, with no word).
      if (words.length === 0) continue
      const part = JSON.stringify([lead.id, wordsText(words), words])
      const size = escapedBytes(part) + 2
      if (bytes + size > budget) flush()
      parts.push(part)
      bytes += size
    }
    flush()
    return statements
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
          const searched = leads.map((lead) => ({
            id: lead.id,
            customerId: id,
            contactName: lead.contact_name,
            contactEmail: lead.contact_email,
            status: lead.status,
            stageId: lead.stage_id,
            leadLine: lead.lead_line,
          }))
          await runEach(trx, this.insertWords(searched))
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
/**
 * Inserts the word rows of leads sharing a customer and filter values (the first four bindings:
 * customer, status, stage_id, lead_line) from a JSON array (the fifth) with one array per lead:
 * its id, its words each after a space (the `words` column) and the words (one row each).
 * Arrays rather than objects: MariaDB reads a member by position faster than by name. The alias
 * is not `lead`, a reserved word of MySQL 8 (the window function LEAD).
 */
function wordRowsSql(db: Db): string {
  const insert = 'INSERT INTO `lead_search_words` (`customer_id`, `status`, `stage_id`, `lead_line`, `word`, `lead_id`, `words`)'
  if (!isMysql(db)) {
    return `${insert} SELECT ?, ?, ?, ?, word.value, entry.value ->> '$[0]', entry.value ->> '$[1]' FROM json_each(?) AS entry, json_each(entry.value, '$[2]') AS word`
  }
  return (
    `${insert} SELECT ?, ?, ?, ?, entry.word, entry.lead_id, entry.words FROM JSON_TABLE(?, '$[*]' COLUMNS (` +
    `lead_id VARCHAR(36) PATH '$[0]', words VARCHAR(${LEAD_WORDS_MAX_LENGTH}) PATH '$[1]', ` +
    `NESTED PATH '$[2][*]' COLUMNS (word VARCHAR(${WORD_MAX_LENGTH}) PATH '$'))) AS entry`
  )
}

/** The `words` column of a lead's word rows: each word after a space, so a word is found as ` word`. */
function wordsText(words: readonly string[]): string {
  return words.map((word) => ` ${word}`).join('')
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
