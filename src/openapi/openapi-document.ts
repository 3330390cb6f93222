import {RECOVER_REQUEST_SCHEMA, RECOVER_RESPONSE_SCHEMA} from '../deliveries/recover.js'
import {ENDPOINT_SCOPES, type Endpoint} from '../keys/scopes.js'
import {LEAD_INPUT_SCHEMA} from '../leads/lead-input.js'
import {BULK_RESPONSE_SCHEMA, CREATE_LEAD_RESPONSE_SCHEMA, LEAD_LIST_SCHEMA, LEAD_SCHEMA} from '../leads/lead-schemas.js'
import {BULK_REQUEST_SCHEMA} from '../leads/bulk-writer.js'
import {LIST_QUERY_SCHEMA} from '../leads/list-query.js'
import {ERROR_ENVELOPE_SCHEMA} from '../shared/error-schema.js'
import {CREATE_WEBHOOK_SCHEMA, SIGNING_SECRET_SCHEMA, UPDATE_WEBHOOK_SCHEMA, WEBHOOK_SCHEMA} from '../webhooks/webhook-schemas.js'

type Json = Record<string, unknown>

const ref = (name: string) => ({$ref: `#/components/schemas/${name}`})
const json = (schema: Json) => ({'application/json': {schema}})

const RATE_HEADERS = {
  'RateLimit-Limit': {$ref: '#/components/headers/RateLimitLimit'},
  'RateLimit-Remaining': {$ref: '#/components/headers/RateLimitRemaining'},
  'RateLimit-Reset': {$ref: '#/components/headers/RateLimitReset'},
  'X-Request-Id': {$ref: '#/components/headers/RequestId'},
}

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid query, body or header (`param` names it); also a cursor replayed under another sort.',
  401: 'Missing or invalid token, or missing or malformed `x-customer-id`.',
  403: 'The key lacks the scope, or is locked to another customer.',
  404: 'No such webhook for this customer.',
  409: 'Idempotency-Key reused with another body, or its first request still in progress.',
  413: 'Body over 1 MiB (10 MiB on bulk).',
  415: 'Body is not application/json.',
  429: 'Rate limit exceeded; wait Retry-After seconds.',
  500: 'Unexpected failure; quote X-Request-Id to the operator.',
}

/** The error responses of an operation; `texts` replaces the usual description of a status where it means something else here. */
function errors(statuses: number[], texts: Record<number, string> = {}): Json {
  return Object.fromEntries(
    statuses.map((status) => [
      String(status),
      {
        description: texts[status] ?? ERROR_TEXT[status],
        headers: status === 429 ? {...RATE_HEADERS, 'Retry-After': {$ref: '#/components/headers/RetryAfter'}} : RATE_HEADERS,
        content: json(ref('Error')),
      },
    ]),
  )
}

/** An API operation: its scope from the scope table, stated first in its description (`about` follows). */
function operation(endpoint: Endpoint, summary: string, spec: Json, about?: string): Json {
  const scope = ENDPOINT_SCOPES[endpoint]
  return {
    summary,
    description: `Requires scope \`${scope}\`.${about === undefined ? '' : ` ${about}`}`,
    'x-required-scope': scope,
    security: [{bearerAuth: [], customerId: []}],
    ...spec,
  }
}

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Client-generated, unique per request; scoped per customer and endpoint, kept 24 h.',
  schema: {type: 'string', minLength: 1, maxLength: 255},
}
const WEBHOOK_ID = {name: 'id', in: 'path', required: true, schema: {type: 'string', pattern: '^wh_[0-9a-f]+$'}}
const REPLAYED = {'Idempotent-Replayed': {description: '`true` when this is a stored response replayed.', schema: {type: 'string', enum: ['true']}}}

/**
 * The OpenAPI 3.1 document of the public API, assembled from the same JSON Schemas that
 * validate requests and describe responses, so the document cannot drift from the code.
 */
export function openApiDocument(): Json {
  const listParameters = Object.entries(LIST_QUERY_SCHEMA.properties).map(([name, schema]) => ({name, in: 'query', required: false, schema}))
  const bulkRequest = {
    ...BULK_REQUEST_SCHEMA,
    properties: {...BULK_REQUEST_SCHEMA.properties, leads: {...BULK_REQUEST_SCHEMA.properties.leads, items: ref('LeadInput')}},
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Lead service',
      version: '1.0.0',
      description: 'Pull, push and webhooks for CRM leads. Server-to-server only: a token must never reach a browser or an app the end user controls.',
      license: {name: 'Proprietary', identifier: 'LicenseRef-Proprietary'},
    },
    servers: [{url: 'http://127.0.0.1:8080', description: 'Local daemon (embedded default)'}],
    security: [{bearerAuth: [], customerId: []}],
    tags: [
      {name: 'leads', description: 'Pull and push leads.'},
      {name: 'webhooks', description: 'Register the URLs that receive signed lead.created events.'},
      {name: 'health', description: 'Probes for orchestrators; no credentials.'},
    ],
    paths: {
      '/api/agents/crm/leads': {
        get: operation('GET /api/agents/crm/leads', 'List and search leads', {
          operationId: 'listLeads',
          tags: ['leads'],
          parameters: listParameters,
          responses: {'200': {description: 'A page of leads.', headers: RATE_HEADERS, content: json(ref('LeadList'))}, ...errors([400, 401, 403, 429, 500])},
        }),
        post: operation('POST /api/agents/crm/leads', 'Create a lead, or merge into the match by email or phone', {
          operationId: 'createLead',
          tags: ['leads'],
          parameters: [IDEMPOTENCY_KEY],
          requestBody: {required: true, content: json(ref('LeadInput'))},
          responses: {
            '201': {description: 'The created or merged lead.', headers: {...RATE_HEADERS, ...REPLAYED}, content: json(ref('CreateLeadResponse'))},
            ...errors([400, 401, 403, 409, 413, 415, 429, 500]),
          },
        }),
      },
      '/api/agents/crm/leads/bulk': {
        post: operation('POST /api/agents/crm/leads/bulk', 'Create or merge up to 500 leads', {
          operationId: 'bulkCreateLeads',
          tags: ['leads'],
          parameters: [IDEMPOTENCY_KEY],
          requestBody: {required: true, content: json(ref('BulkRequest'))},
          responses: {
            '200': {description: 'Per-row results.', headers: {...RATE_HEADERS, ...REPLAYED}, content: json(ref('BulkResponse'))},
            ...errors([400, 401, 403, 409, 413, 415, 429, 500]),
          },
        }),
      },
      '/api/agents/crm/lead-webhooks': {
        post: operation('POST /api/agents/crm/lead-webhooks', 'Register a webhook', {
          operationId: 'createWebhook',
          tags: ['webhooks'],
          requestBody: {required: true, content: json(ref('CreateWebhook'))},
          responses: {
            '201': {
              description: 'The webhook and its signing secret, shown this once.',
              headers: RATE_HEADERS,
              content: json({
                type: 'object',
                additionalProperties: false,
                required: ['webhook', 'secret'],
                properties: {webhook: ref('Webhook'), secret: ref('SigningSecret')},
              }),
            },
            ...errors([400, 401, 403, 415, 429, 500]),
          },
        }),
        get: operation('GET /api/agents/crm/lead-webhooks', "List the customer's webhooks", {
          operationId: 'listWebhooks',
          tags: ['webhooks'],
          responses: {
            '200': {
              description: 'Webhooks, without secrets.',
              headers: RATE_HEADERS,
              content: json({
                type: 'object',
                additionalProperties: false,
                required: ['webhooks'],
                properties: {webhooks: {type: 'array', items: ref('Webhook')}},
              }),
            },
            ...errors([401, 403, 429, 500]),
          },
        }),
      },
      '/api/agents/crm/lead-webhooks/{id}': {
        patch: operation('PATCH /api/agents/crm/lead-webhooks/:id', 'Update a webhook or rotate its secret', {
          operationId: 'updateWebhook',
          tags: ['webhooks'],
          parameters: [WEBHOOK_ID],
          requestBody: {required: true, content: json(ref('UpdateWebhook'))},
          responses: {
            '200': {
              description:
                'The webhook; `secret` only when rotate_secret was true. For 24 h after a rotation, deliveries also carry X-Service-Signature-Previous, made with the replaced secret.',
              headers: RATE_HEADERS,
              content: json({
                type: 'object',
                additionalProperties: false,
                required: ['webhook'],
                properties: {webhook: ref('Webhook'), secret: ref('SigningSecret')},
              }),
            },
            ...errors([400, 401, 403, 404, 415, 429, 500]),
          },
        }),
        delete: operation('DELETE /api/agents/crm/lead-webhooks/:id', 'Delete a webhook; its pending deliveries are cancelled', {
          operationId: 'deleteWebhook',
          tags: ['webhooks'],
          parameters: [WEBHOOK_ID],
          responses: {
            '200': {
              description: 'Deleted.',
              headers: RATE_HEADERS,
              content: json({
                type: 'object',
                additionalProperties: false,
                required: ['id', 'deleted'],
                properties: {id: {type: 'string'}, deleted: {const: true}},
              }),
            },
            ...errors([401, 403, 404, 429, 500]),
          },
        }),
      },
      '/api/agents/crm/lead-webhooks/{id}/recover': {
        post: operation(
          'POST /api/agents/crm/lead-webhooks/:id/recover',
          "Queue a webhook's failed deliveries again",
          {
            operationId: 'recoverWebhookDeliveries',
            tags: ['webhooks'],
            parameters: [WEBHOOK_ID],
            requestBody: {required: true, content: json(ref('RecoverRequest'))},
            responses: {
              '202': {
                description: 'How many failed deliveries were queued; they are sent within seconds.',
                headers: RATE_HEADERS,
                content: json(ref('RecoverResponse')),
              },
              ...errors([400, 401, 403, 404, 409, 415, 429, 500], {
                400: 'Missing or invalid `since`, one more than 7 days ago, or one in the future (`param: "since"`).',
                409: 'The webhook is disabled: its deliveries would be cancelled, not sent. Enable it first.',
              }),
            },
          },
          'Queues again every failed delivery of the webhook created at or after `since` (at most 7 days back): a delivery that used up its `retry_attempts + 1` attempts starts over with a fresh schedule, keeping its `X-Service-Delivery` id, each attempt signed afresh.',
        ),
      },
      '/healthz': {
        get: {
          operationId: 'health',
          tags: ['health'],
          summary: 'The process is up',
          security: [],
          responses: {'200': {description: 'Up.', content: json({type: 'object', required: ['status'], properties: {status: {const: 'ok'}}})}},
        },
      },
      '/readyz': {
        get: {
          operationId: 'ready',
          tags: ['health'],
          summary: 'The database and Redis answer',
          security: [],
          responses: {
            '200': {description: 'Ready.', content: json(ref('Readiness'))},
            '503': {description: 'A backing store does not answer.', content: json(ref('Readiness'))},
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearerAuth: {type: 'http', scheme: 'bearer', description: 'Personal Access Token `svc_<64 hex>` issued by the operator.'},
        customerId: {type: 'apiKey', in: 'header', name: 'x-customer-id', description: 'UUID of the customer the key is locked to.'},
      },
      headers: {
        RateLimitLimit: {description: 'Limit of the reported window (the one with the least remaining).', schema: {type: 'integer'}},
        RateLimitRemaining: {description: 'Requests left in that window.', schema: {type: 'integer'}},
        RateLimitReset: {description: 'Seconds until that window resets.', schema: {type: 'integer'}},
        RetryAfter: {description: 'Seconds to wait before retrying.', schema: {type: 'integer'}},
        RequestId: {description: "Request id: the caller's X-Request-Id when sane, otherwise minted.", schema: {type: 'string'}},
      },
      schemas: {
        Lead: LEAD_SCHEMA,
        LeadList: LEAD_LIST_SCHEMA,
        LeadInput: LEAD_INPUT_SCHEMA,
        CreateLeadResponse: CREATE_LEAD_RESPONSE_SCHEMA,
        BulkRequest: bulkRequest,
        BulkResponse: BULK_RESPONSE_SCHEMA,
        Webhook: WEBHOOK_SCHEMA,
        CreateWebhook: CREATE_WEBHOOK_SCHEMA,
        UpdateWebhook: UPDATE_WEBHOOK_SCHEMA,
        SigningSecret: SIGNING_SECRET_SCHEMA,
        RecoverRequest: RECOVER_REQUEST_SCHEMA,
        RecoverResponse: RECOVER_RESPONSE_SCHEMA,
        Error: ERROR_ENVELOPE_SCHEMA,
        Readiness: {
          type: 'object',
          required: ['status', 'checks', 'reasons'],
          properties: {
            status: {type: 'string', enum: ['ready', 'unavailable']},
            checks: {
              type: 'object',
              properties: {
                database: {type: 'boolean'},
                redis: {type: ['boolean', 'null'], description: 'null when LEADS_REDIS_URL is unset'},
                dispatch: {type: ['boolean', 'null'], description: 'false when every read of the delivery stream has failed for 15 s; null without Redis'},
              },
            },
            reasons: {type: 'array', items: {type: 'string'}, description: 'Why the daemon is not ready; empty when it is'},
          },
        },
      },
    },
  }
}
