/**
 * What each part of a single create's one round trip costs the database: the batch the guess
 * sends (docs/design.md, "How a write is done") built by the service's own stores (START
 * TRANSACTION, the match keys registered as new, the guard of the setup version, the lead with
 * its counts and search words, the lead.created event, COMMIT; keyed, the Idempotency-Key's claim
 * first, in either of its two forms), sent straight through mysql2 at
 * c=1, against the same
 * batch without one part, and against the floor's two inserts alone in one round trip. Variants
 * alternate request by request, so every one sees the same machine; each row of the table is the
 * median and p99 of its round trips. Shows where a create's time at c=1 goes beyond the floor's.
 *
 * Run: npm run build && LEADS_BENCH_MYSQL_URL=mysql://root@127.0.0.1:3306/leads_bench node dist/bench/create-batch-parts.js [--requests 2000]
 * The figures go to bench/results/create-batch-parts-<ISO 8601 basic time>.json.
 */
import {parseArgs} from 'node:util'

import mysql from 'mysql2/promise'

import {loadConfig} from '../src/config/config.js'
import {CustomersStore} from '../src/customers/customers-store.js'
import {createDb, readServerFacts} from '../src/db/knex.js'
import {guardStatement, type Statement} from '../src/db/statements.js'
import {EventsStore} from '../src/events/events-store.js'
import {LEAD_CREATED, leadCreatedSnapshot} from '../src/events/lead-created.js'
import {IdempotencyStore} from '../src/idempotency/idempotency-store.js'
import {customerSetup, parseLeadInput} from '../src/leads/lead-input.js'
import {LeadCountsStore} from '../src/leads/lead-counts-store.js'
import {LeadMatchStore} from '../src/leads/lead-match-store.js'
import {newPeopleChecks} from '../src/leads/lead-matching.js'
import {newLead} from '../src/leads/lead-merge.js'
import {LeadSearchIndex} from '../src/leads/lead-search-index.js'
import {LeadWriteStatements} from '../src/leads/lead-write-statements.js'
import {createLogger} from '../src/log/logger.js'
import {createServices} from '../src/services.js'
import {median, p99} from './push-floor.js'
import {checkoutCommit, writeResults} from './results-file.js'

const {values: args} = parseArgs({options: {requests: {type: 'string', default: '2000'}}})
const REQUESTS = Number(args.requests)
const url = process.env['LEADS_BENCH_MYSQL_URL']
if (!url) {
  console.error('usage: LEADS_BENCH_MYSQL_URL=mysql://… node dist/bench/create-batch-parts.js [--requests N]')
  process.exit(2)
}

/** The parts of the batch a variant leaves out. */
type Part = 'registrations' | 'guard' | 'counts' | 'words'
/** How a keyed variant claims its Idempotency-Key (IdempotencyStore.claims): MariaDB's insert with no lock wait, or MySQL 8's NOWAIT read first. */
type Claim = 'insert' | 'read'
const VARIANTS: ReadonlyArray<{name: string; without: readonly Part[]; claim?: Claim}> = [
  {name: 'whole batch', without: []},
  {name: 'keyed, claimed by its insert alone', without: [], claim: 'insert'},
  {name: 'keyed, claimed after a NOWAIT read', without: [], claim: 'read'},
  {name: 'without the match keys registered', without: ['registrations']},
  {name: 'without the guard', without: ['guard']},
  {name: 'without the counts', without: ['counts']},
  {name: 'without the search words', without: ['words']},
  {name: 'lead and event only (the floor)', without: ['registrations', 'guard', 'counts', 'words']},
]

const startedAt = new Date()
const services = await createServices(loadConfig({LEADS_MASTER_KEY: 'cd'.repeat(32), LEADS_DATABASE_URL: url}), {
  logger: createLogger('silent'),
  autoMigrate: true,
})
const customer = await services.customers.create({name: 'bench create batch parts'})
await services.close()

const db = createDb({client: 'mysql', url})
const customers = new CustomersStore(db)
const stages = await customers.listStages(customer.id)
const setup = customerSetup(stages, await customers.listFields(customer.id))
const version = (await db('customers').where({id: customer.id}).first('setup_version')) as {setup_version: number}
const counts = new LeadCountsStore(db, customers)
const searchIndex = new LeadSearchIndex(db, customers)
const leads = new LeadWriteStatements(db, counts, searchIndex)
const matches = new LeadMatchStore(db)
const events = new EventsStore(db)
// The two claims as IdempotencyStore writes them: a handle that asked its server (MariaDB) and one that did not (as on MySQL 8).
const askedDb = createDb({client: 'mysql', url})
await readServerFacts(askedDb)
const claims: Record<Claim, IdempotencyStore> = {insert: new IdempotencyStore(askedDb), read: new IdempotencyStore(db)}

/** The batch of the `i`th create, without the parts named, and with its key's claim when `claim` says how. */
function batch(i: number, without: readonly Part[], claim?: Claim): Statement[] {
  const input = parseLeadInput(
    {
      contact_name: `Parts ${startedAt.getTime()} ${i}`,
      contact_email: `parts-${startedAt.getTime()}-${i}@example.org`,
      contact_phone: `+1 ${String(i).padStart(10, '0')}`,
    },
    setup,
  )
  const lead = newLead(customer.id, input, {stageId: stages[0]!.id, sourceType: 'manual'}, Date.now())
  const event = events.event({
    customerId: customer.id,
    type: LEAD_CREATED,
    leadId: lead.id,
    payload: leadCreatedSnapshot({...lead, stage: stages[0]!, owner: null}),
    createdAt: lead.createdAt,
  })
  const registrations = newPeopleChecks(matches, customer.id, [input])
  const probes = [customers.setupChangedProbe(customer.id, Number(version.setup_version))]
  const [leadRow, ...derived] = leads.insertStatements([lead])
  const isCount = (statement: Statement) => statement.sql.includes('lead_counts')
  const now = Date.now()
  const record = {customerId: customer.id, endpoint: 'POST /api/agents/crm/leads', key: `parts-${startedAt.getTime()}-${i}`, requestHash: 'h'.repeat(64)}
  const answer = {
    claim: {...record, statusCode: null, responseBody: null, claimedAt: now, expiresAt: now + 86_400_000},
    statusCode: 201,
    responseBody: JSON.stringify({lead}),
  }
  return [
    {sql: 'START TRANSACTION', bindings: []},
    ...(claim ? claims[claim].claimAnsweredStatements([answer]) : []),
    ...(without.includes('registrations') ? [] : registrations),
    ...(without.includes('guard') ? [] : [guardStatement(probes)]),
    leadRow!,
    ...derived.filter((statement) => (isCount(statement) ? !without.includes('counts') : !without.includes('words'))),
    ...events.insertStatements([event]),
    {sql: 'COMMIT', bindings: []},
  ]
}

const connection = await mysql.createConnection({uri: url, multipleStatements: true})
const times = VARIANTS.map(() => [] as number[])
try {
  // A quarter more than timed: the first go untimed, while the buffer pool and the plans warm up.
  const warmup = Math.ceil(REQUESTS / 4)
  for (let i = 0; i < warmup + REQUESTS; i++) {
    for (const [index, {without, claim}] of VARIANTS.entries()) {
      const statements = batch(i * VARIANTS.length + index, without, claim)
      const sql = statements.map((statement) => statement.sql).join(';\n')
      const started = performance.now()
      await connection.query(
        sql,
        statements.flatMap((statement) => [...statement.bindings]),
      )
      if (i >= warmup) times[index]!.push(performance.now() - started)
    }
  }
} finally {
  await connection.end()
  await db.destroy()
  await askedDb.destroy()
}

const rows = VARIANTS.map(({name}, index) => ({variant: name, median_ms: median(times[index]!), p99_ms: p99(times[index]!)}))
console.log(`One create's batch at c=1 on MariaDB, ${REQUESTS} round trips per variant, alternating`)
console.log('variant'.padEnd(36), 'median ms'.padStart(10), 'p99 ms'.padStart(8), '  median over whole')
for (const row of rows)
  console.log(
    row.variant.padEnd(36),
    row.median_ms.toFixed(3).padStart(10),
    row.p99_ms.toFixed(3).padStart(8),
    `  ${(row.median_ms - rows[0]!.median_ms).toFixed(3)}`,
  )
const file = writeResults('create-batch-parts', startedAt, {
  bench: 'bench/create-batch-parts.ts',
  command: `node dist/bench/create-batch-parts.js --requests ${REQUESTS}`,
  started_at: startedAt.toISOString(),
  git_commit: checkoutCommit().commit,
  settings: {requests: REQUESTS, concurrency: 1, database: 'MariaDB'},
  variants: rows,
})
console.log(`results: ${file}`)
