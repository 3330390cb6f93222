import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {expect} from 'chai'

import {FIELD_TYPES, LEAD_LINE_VALUES} from '../../../src/customers/customer-types.js'
import {createDb} from '../../../src/db/knex.js'
import {migrateLatest} from '../../../src/db/migrate.js'
import {WRITER_LIMITS} from '../../../src/db/writer-nodes.js'
import {defaultWorkerId, WORKER_ID_MAX_LENGTH} from '../../../src/deliveries/delivery-worker.js'
import {DELIVERY_STATUSES} from '../../../src/deliveries/delivery-types.js'
import {BREAKER_STATES} from '../../../src/webhooks/webhook-types.js'
import {IDEMPOTENCY_KEY_MAX_LENGTH} from '../../../src/idempotency/idempotency-service.js'
import {ENDPOINT_SCOPES, SCOPES} from '../../../src/keys/scopes.js'
import {LEAD_INPUT_SCHEMA} from '../../../src/leads/lead-input.js'
import {LEAD_LIMITS} from '../../../src/leads/lead-limits.js'
import {LEAD_WORDS_MAX_LENGTH, WORD_MAX_LENGTH} from '../../../src/leads/lead-search-terms.js'
import {LEAD_STATUSES, SOURCE_PLATFORMS, SOURCE_TYPES} from '../../../src/leads/lead-types.js'
import {NAME_MAX_LENGTH, SLUG_MAX_LENGTH} from '../../../src/shared/validate.js'
import {CREATE_WEBHOOK_SCHEMA} from '../../../src/webhooks/webhook-schemas.js'
import {masterKeyFingerprint} from '../../../src/webhooks/master-key-check.js'
import {EVENT_TYPES} from '../../../src/webhooks/webhook-types.js'

const UUID = 36
const longest = (values: readonly string[]) => Math.max(...values.map((value) => value.length))
const input = LEAD_INPUT_SCHEMA.properties

/**
 * The longest value the code can write to each VARCHAR column: an input cap for what clients and
 * operators send, or the longest value the code itself produces. A column missing here fails the
 * test, so a new column cannot ship without the cap that guards it.
 */
const WRITTEN: Record<string, number> = {
  'customers.id': UUID,
  'customers.name': NAME_MAX_LENGTH,
  'stages.id': UUID,
  'stages.customer_id': UUID,
  'stages.slug': SLUG_MAX_LENGTH,
  'stages.name': NAME_MAX_LENGTH,
  'stages.color': '#rrggbb'.length,
  'custom_fields.id': UUID,
  'custom_fields.customer_id': UUID,
  'custom_fields.slug': SLUG_MAX_LENGTH,
  'custom_fields.name': NAME_MAX_LENGTH,
  'custom_fields.type': longest(FIELD_TYPES),
  'owners.id': UUID,
  'owners.customer_id': UUID,
  'owners.name': NAME_MAX_LENGTH,
  'owners.role_name': 100,
  'api_keys.id': UUID,
  'api_keys.customer_id': UUID,
  'api_keys.name': NAME_MAX_LENGTH,
  'api_keys.scopes': SCOPES.join(',').length,
  'api_tokens.token_hash': 64,
  'api_tokens.key_id': UUID,
  'leads.id': UUID,
  'leads.customer_id': UUID,
  'leads.source_platform': longest(SOURCE_PLATFORMS),
  'leads.source_type': longest(SOURCE_TYPES),
  'leads.status': longest(LEAD_STATUSES),
  'leads.contact_name': input.contact_name.maxLength,
  'leads.contact_phone': input.contact_phone.maxLength,
  'leads.contact_email': input.contact_email.anyOf[0].maxLength,
  'leads.email_normalized': input.contact_email.anyOf[0].maxLength,
  'leads.phone_digits': LEAD_LIMITS.phoneDigits,
  'leads.phone_last10': 10,
  'leads.stage_id': UUID,
  'leads.owner_id': UUID,
  'leads.lead_line': longest(LEAD_LINE_VALUES),
  'lead_match_locks.customer_id': UUID,
  'lead_change_sequences.customer_id': UUID,
  'lead_counts.customer_id': UUID,
  'lead_search_words.customer_id': UUID,
  'lead_search_words.word': WORD_MAX_LENGTH,
  'lead_search_words.lead_id': UUID,
  'lead_search_words.status': longest(LEAD_STATUSES),
  'lead_search_words.stage_id': UUID,
  'lead_search_words.lead_line': longest(LEAD_LINE_VALUES),
  'lead_search_words.words': LEAD_WORDS_MAX_LENGTH,
  'lead_counts.status': longest(LEAD_STATUSES),
  'lead_counts.stage_id': UUID,
  'lead_counts.lead_line': longest(LEAD_LINE_VALUES),
  'lead_match_locks.match_key': 'e:'.length + input.contact_email.anyOf[0].maxLength,
  'idempotency_keys.customer_id': UUID,
  // A webhook's PATCH is keyed per webhook: its endpoint carries the webhook's id.
  'idempotency_keys.endpoint': longest([...Object.keys(ENDPOINT_SCOPES), `PATCH /api/agents/crm/lead-webhooks/wh_${'0'.repeat(24)}`]),
  'idempotency_keys.idempotency_key': IDEMPOTENCY_KEY_MAX_LENGTH,
  'idempotency_keys.request_hash': 64,
  'events.id': UUID,
  'events.customer_id': UUID,
  'events.type': longest(EVENT_TYPES),
  'events.lead_id': UUID,
  'rate_limit_overrides.scope_type': longest(['customer', 'key']),
  'rate_limit_overrides.scope_id': UUID,
  'webhooks.id': 'wh_'.length + 24,
  'webhooks.customer_id': UUID,
  'webhooks.url': CREATE_WEBHOOK_SCHEMA.properties.url.maxLength,
  'webhooks.event_types': EVENT_TYPES.join(',').length,
  'webhooks.disabled_reason': longest(['disabled by an operator', 'disabled through the API', 'every delivery failed for 5 days']),
  'webhooks.disabled_by': longest(['operator', 'customer', 'system']),
  'webhooks.breaker_state': longest(BREAKER_STATES),
  'webhook_in_flight.delivery_id': UUID,
  'webhook_in_flight.customer_id': UUID,
  'webhook_in_flight.webhook_id': 'wh_'.length + 24,
  'deliveries.id': UUID,
  'deliveries.customer_id': UUID,
  'deliveries.webhook_id': 'wh_'.length + 24,
  'deliveries.event_id': UUID,
  'deliveries.status': longest(DELIVERY_STATUSES),
  'deliveries.claimed_by': WORKER_ID_MAX_LENGTH,
  'deliveries.last_error': 500,
  'delivery_attempts.id': UUID,
  'delivery_attempts.delivery_id': UUID,
  'delivery_attempts.error': 500,
  'delivery_attempts.outcome': longest(['success', 'retry', 'final', 'terminal']),
  'database_writers.daemon': WRITER_LIMITS.daemon,
  'database_writers.role': WRITER_LIMITS.role,
  'database_writers.node_id': WRITER_LIMITS.nodeId,
  'database_writers.node_name': WRITER_LIMITS.nodeName,
  'master_key_check.fingerprint': masterKeyFingerprint(Buffer.alloc(32)).length,
}

describe('input caps against the columns the migrations create', function () {
  let columns: Map<string, number>

  before(async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-columns-'))
    const filename = path.join(dir, 'columns.db')
    const db = createDb({client: 'sqlite', filename, url: `sqlite://${filename}`})
    try {
      await migrateLatest(db)
      const tables = (await db.raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'knex%' AND name NOT LIKE 'sqlite%'`)) as Array<{
        name: string
      }>
      columns = new Map()
      for (const {name: table} of tables) {
        for (const column of (await db.raw(`PRAGMA table_info(${table})`)) as Array<{name: string; type: string}>) {
          const size = /^varchar\((\d+)\)$/i.exec(column.type)
          if (size) columns.set(`${table}.${column.name}`, Number(size[1]))
        }
      }
    } finally {
      await db.destroy()
      fs.rmSync(dir, {recursive: true, force: true})
    }
  })

  it('knows the cap of every VARCHAR column', function () {
    const unguarded = [...columns.keys()].filter((column) => !(column in WRITTEN))
    expect(unguarded, 'columns with no cap recorded here: add the input cap that guards each').to.deep.equal([])
  })

  it('never lets a value longer than its column through', function () {
    const overflowing = [...columns].filter(([column, size]) => WRITTEN[column]! > size).map(([column, size]) => `${column}: ${WRITTEN[column]} > ${size}`)
    expect(overflowing).to.deep.equal([])
  })

  it('keeps the lead JSON and the worker id within their columns', function () {
    // leads.custom_fields is TEXT: 65,535 bytes on MySQL.
    expect(LEAD_LIMITS.customFieldsBytes).to.be.at.most(65_535)
    expect(defaultWorkerId('h'.repeat(64))).to.have.length.at.most(WORKER_ID_MAX_LENGTH)
  })
})
