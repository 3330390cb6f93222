import {LIST_QUERY_SCHEMA} from '../leads/list-query.js'
import {ANONYMOUS_PER_MINUTE} from '../ratelimit/limits.js'
import {TEXT_RULE} from '../shared/text.js'
import {components} from './openapi-components.js'
import {errors, IDEMPOTENCY_KEY, json, operation, RATE_HEADERS, ref, WEBHOOK_ID, WRITE_HEADERS} from './openapi-responses.js'

type Json = Record<string, unknown>

const requestBody = (name: string) => ({$ref: `#/components/requestBodies/${name}`})

const ABOUT = [
  'Pull, push and webhooks for CRM leads. Server-to-server only: a token must never reach a browser or an app the end user controls.',
  'Every response of the API carries `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and `X-Request-Id`; a 429 adds `Retry-After`. Errors have the envelope `Error`, whose `code` is the HTTP status.',
  'A method a path does not serve is answered 405 with `Allow` (TRACE and OPTIONS too: there is no CORS); HEAD is served wherever GET is. A method HTTP does not have is answered 501.',
  TEXT_RULE,
].join('\n\n')

/**
 * The OpenAPI 3.1 document of the public API, assembled from the same JSON Schemas that
 * validate requests and describe responses, so the document cannot drift from the code.
 */
export function openApiDocument(): Json {
  const listParameters = Object.entries(LIST_QUERY_SCHEMA.properties).map(([name, schema]) => ({name, in: 'query', required: false, schema}))
  return {
    openapi: '3.1.0',
    info: {title: 'Lead service', version: '1.0.0', description: ABOUT, license: {name: 'Proprietary', identifier: 'LicenseRef-Proprietary'}},
    // Relative: resolved against where this document was fetched from, so it is right behind any host, port or proxy.
    servers: [{url: '/', description: 'The daemon that serves this document'}],
    security: [{bearerAuth: [], customerId: []}],
    tags: [
      {name: 'leads', description: 'Pull and push leads.'},
      {name: 'webhooks', description: 'Register the URLs that receive signed lead.created events.'},
      {name: 'health', description: 'Probes for orchestrators; no credentials.'},
    ],
    paths: {...leadPaths(listParameters), ...webhookPaths(), ...healthPaths()},
    webhooks: webhookEvents(),
    components: components(),
  }
}

function leadPaths(listParameters: Json[]): Json {
  return {
    '/api/agents/crm/leads': {
      get: operation(
        'GET /api/agents/crm/leads',
        'List and search leads',
        {
          operationId: 'listLeads',
          tags: ['leads'],
          parameters: listParameters,
          responses: {'200': {description: 'A page of leads.', headers: RATE_HEADERS, content: json(ref('LeadList'))}, ...errors([400, 401, 403, 429, 500])},
        },
        'A query parameter not listed here, or one given twice, is a 400 naming it, so that a misspelt filter is never ignored. A request whose page or total would take longer than the statement time limit (2 s by default) is a 400 too, `param: "search"` for a search, saying how to narrow it (a longer or rarer word, or a filter).',
      ),
      post: operation('POST /api/agents/crm/leads', 'Create a lead, or merge into the match by email or phone', {
        operationId: 'createLead',
        tags: ['leads'],
        parameters: [IDEMPOTENCY_KEY],
        requestBody: requestBody('CreateLead'),
        responses: {
          '201': {description: 'The created or merged lead.', headers: WRITE_HEADERS, content: json(ref('CreateLeadResponse'))},
          ...errors([400, 401, 403, 409, 413, 415, 429, 500], {}, true),
        },
      }),
    },
    '/api/agents/crm/leads/bulk': {
      post: operation('POST /api/agents/crm/leads/bulk', 'Create or merge up to 500 leads', {
        operationId: 'bulkCreateLeads',
        tags: ['leads'],
        parameters: [IDEMPOTENCY_KEY],
        requestBody: requestBody('BulkRequest'),
        responses: {
          '200': {description: 'Per-row results.', headers: WRITE_HEADERS, content: json(ref('BulkResponse'))},
          ...errors([400, 401, 403, 409, 413, 415, 429, 500], {}, true),
        },
      }),
    },
  }
}

const webhookAnswer = (properties: Json, required: string[]) => json({type: 'object', additionalProperties: false, required, properties})

function webhookPaths(): Json {
  return {
    '/api/agents/crm/lead-webhooks': {
      post: operation('POST /api/agents/crm/lead-webhooks', 'Register a webhook', {
        operationId: 'createWebhook',
        tags: ['webhooks'],
        parameters: [IDEMPOTENCY_KEY],
        requestBody: requestBody('CreateWebhook'),
        responses: {
          '201': {
            description: 'The webhook and its signing secret, shown this once (and again in the replay of a retry with the same Idempotency-Key).',
            headers: WRITE_HEADERS,
            content: webhookAnswer({webhook: ref('Webhook'), secret: ref('SigningSecret')}, ['webhook', 'secret']),
          },
          ...errors([400, 401, 403, 409, 413, 415, 429, 500], {}, true),
        },
      }),
      get: operation('GET /api/agents/crm/lead-webhooks', "List the customer's webhooks", {
        operationId: 'listWebhooks',
        tags: ['webhooks'],
        responses: {
          '200': {
            description: 'Webhooks, without secrets.',
            headers: RATE_HEADERS,
            content: webhookAnswer({webhooks: {type: 'array', items: ref('Webhook')}}, ['webhooks']),
          },
          ...errors([401, 403, 429, 500]),
        },
      }),
    },
    '/api/agents/crm/lead-webhooks/{id}': {
      patch: operation('PATCH /api/agents/crm/lead-webhooks/:id', 'Update a webhook or rotate its secret', {
        operationId: 'updateWebhook',
        tags: ['webhooks'],
        parameters: [WEBHOOK_ID, IDEMPOTENCY_KEY],
        requestBody: requestBody('UpdateWebhook'),
        responses: {
          '200': {
            description:
              'The webhook; `secret` only when rotate_secret was true (and again in the replay of a retry with the same Idempotency-Key, which rotates nothing). For 24 h after a rotation, deliveries also carry X-Service-Signature-Previous, made with the replaced secret.',
            headers: WRITE_HEADERS,
            content: webhookAnswer({webhook: ref('Webhook'), secret: ref('SigningSecret')}, ['webhook']),
          },
          ...errors(
            [400, 401, 403, 404, 409, 413, 415, 429, 500],
            {
              409: '`is_active: true` for a webhook the service operator disabled: only the operator can enable it. Nothing is changed; the other fields can be changed without `is_active`. Or the Idempotency-Key was used with another body for this webhook, or its first request is still in progress (only then with Retry-After).',
            },
            true,
          ),
        },
      }),
      delete: operation('DELETE /api/agents/crm/lead-webhooks/:id', 'Delete a webhook; its pending deliveries are cancelled', {
        operationId: 'deleteWebhook',
        tags: ['webhooks'],
        parameters: [WEBHOOK_ID],
        responses: {
          '200': {description: 'Deleted.', headers: RATE_HEADERS, content: webhookAnswer({id: {type: 'string'}, deleted: {const: true}}, ['id', 'deleted'])},
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
          requestBody: requestBody('RecoverRequest'),
          responses: {
            '202': {
              description: 'How many failed deliveries were queued; they are sent within seconds.',
              headers: RATE_HEADERS,
              content: json(ref('RecoverResponse')),
            },
            ...errors([400, 401, 403, 404, 409, 413, 415, 429, 500], {
              400: 'Missing or invalid `since`, one more than 7 days ago, or one in the future (`param: "since"`).',
              409: 'The webhook is disabled: its deliveries would be cancelled, not sent. Enable it first.',
            }),
          },
        },
        'Queues again every failed delivery of the webhook created at or after `since` (at most 7 days back): a delivery that used up its `retry_attempts + 1` attempts starts over with a fresh schedule, keeping its `X-Service-Delivery` id, each attempt signed afresh.',
      ),
    },
  }
}

const signature = (description: string, required: boolean) => ({
  name: required ? 'X-Service-Signature' : 'X-Service-Signature-Previous',
  in: 'header',
  required,
  description,
  schema: {type: 'string', pattern: '^sha256=[0-9a-f]{64}$'},
})

/**
 * What the service sends to a registered URL (OpenAPI 3.1 `webhooks`): the lead.created request,
 * its signature headers and what the answer means, so a receiver can be written, or generated,
 * from this document alone.
 */
function webhookEvents(): Json {
  return {
    'lead.created': {
      post: {
        operationId: 'leadCreated',
        tags: ['webhooks'],
        summary: 'A new lead (sent to every active webhook registered for lead.created)',
        description:
          'Sent for a genuine insert through `POST /api/agents/crm/leads`; never for a merge into an existing lead or for bulk rows. Verify it before parsing: HMAC-SHA256 keyed with the whole secret `svc_whsec_<hex>` (UTF-8) over `<X-Service-Timestamp>.<raw body>`, written `sha256=<lower-case hex>` and compared in constant time with X-Service-Signature (or X-Service-Signature-Previous); reject a timestamp more than about 5 minutes from your clock. Delivery is at least once: de-duplicate by X-Service-Delivery.',
        security: [],
        parameters: [
          signature("HMAC-SHA256 over `<X-Service-Timestamp>.<raw body>`, keyed with the webhook's current secret.", true),
          signature('For 24 h after the secret was rotated only: the same, keyed with the secret the rotation replaced.', false),
          {
            name: 'X-Service-Timestamp',
            in: 'header',
            required: true,
            description: 'Unix seconds when this attempt was signed; part of the signed material. Every attempt has its own.',
            schema: {type: 'string', pattern: '^[0-9]+$'},
          },
          {
            name: 'X-Service-Delivery',
            in: 'header',
            required: true,
            description: 'The delivery id: the same across its retries and redeliveries. De-duplicate by it.',
            schema: {type: 'string', format: 'uuid'},
          },
        ],
        requestBody: {required: true, content: json(ref('LeadCreatedEvent'))},
        responses: {
          '2XX': {description: "Acknowledged: the delivery is done. Answer within the webhook's `timeout_seconds`, or the attempt counts as failed."},
          '3XX': {description: 'Not followed, and not retried: the delivery fails.'},
          default: {
            description:
              'Any other answer (4xx, 5xx), a timeout or a failed connection is retried: `retry_attempts + 1` attempts in all, backoff 1 s doubling with jitter, at most 30 s apart.',
          },
        },
      },
    },
  }
}

// The probe itself is answered before any limit; a method the path does not serve is a keyless request like any other.
const PROBE_LIMIT = {
  429: `Only for a method this path does not serve, from a client address over its keyless budget (${ANONYMOUS_PER_MINUTE} requests a minute); GET is never limited.`,
}

function healthPaths(): Json {
  return {
    '/healthz': {
      get: {
        operationId: 'health',
        tags: ['health'],
        summary: 'The process is up',
        security: [],
        responses: {
          '200': {description: 'Up.', content: json({type: 'object', required: ['status'], properties: {status: {const: 'ok'}}})},
          ...errors([429], PROBE_LIMIT),
        },
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
          ...errors([429], PROBE_LIMIT),
        },
      },
    },
  }
}
