import {LEAD_CREATED_EVENT_SCHEMA} from '../events/lead-created.js'
import {RECOVER_REQUEST_SCHEMA, RECOVER_RESPONSE_SCHEMA} from '../deliveries/recover.js'
import {BULK_REQUEST_SCHEMA} from '../leads/bulk-writer.js'
import {LEAD_INPUT_SCHEMA} from '../leads/lead-input.js'
import {BULK_RESPONSE_SCHEMA, CREATE_LEAD_RESPONSE_SCHEMA, LEAD_LIST_SCHEMA, LEAD_SCHEMA, LEAD_WITH_CUSTOM_FIELDS_SCHEMA} from '../leads/lead-schemas.js'
import {ERROR_ENVELOPE_SCHEMA} from '../shared/error-schema.js'
import {CREATE_WEBHOOK_SCHEMA, SIGNING_SECRET_SCHEMA, UPDATE_WEBHOOK_SCHEMA, WEBHOOK_SCHEMA} from '../webhooks/webhook-schemas.js'
import {json, ref} from './openapi-responses.js'

type Json = Record<string, unknown>

const body = (description: string, schema: Json) => ({description, required: true, content: json(schema)})

/**
 * Request bodies, each with its schema written in place rather than under `schemas`. A property
 * with a default is optional to send; openapi-typescript (with its default defaultNonNullable)
 * makes such a property required in every type it generates from `components/schemas`, and
 * leaves it optional only in request bodies and parameters. Written here, `dry_run`,
 * `on_duplicate` and the webhook defaults stay optional in a generated client.
 */
function requestBodies(): Json {
  return {
    CreateLead: body('A lead to create, or to merge into the lead it matches by email or phone.', ref('LeadInput')),
    BulkRequest: body(
      '1 to 500 rows, each a LeadInput on its own: a row that breaks it fails alone (its result has `status: "failed"` and the `error`), the other rows are written and the answer is still 200.',
      {
        ...BULK_REQUEST_SCHEMA,
        properties: {...BULK_REQUEST_SCHEMA.properties, leads: {...BULK_REQUEST_SCHEMA.properties.leads, items: ref('LeadInput')}},
      },
    ),
    CreateWebhook: body('The webhook to register; left out, `timeout_seconds` is 10, `retry_attempts` 5 and `description` null.', CREATE_WEBHOOK_SCHEMA),
    // The daemon reads an empty body as `{}`, which this schema accepts: a PATCH without a body changes nothing (but updated_at).
    UpdateWebhook: {
      ...body('The fields to change; `rotate_secret: true` mints a new secret. No body is `{}`: nothing changes but `updated_at`.', UPDATE_WEBHOOK_SCHEMA),
      required: false,
    },
    RecoverRequest: body('From when failed deliveries are queued again.', RECOVER_REQUEST_SCHEMA),
  }
}

/** The `components` of the API document. */
export function components(): Json {
  return {
    securitySchemes: {
      bearerAuth: {type: 'http', scheme: 'bearer', description: 'Personal Access Token `svc_<64 hex>` issued by the operator.'},
      customerId: {type: 'apiKey', in: 'header', name: 'x-customer-id', description: 'UUID of the customer the key is locked to.'},
    },
    requestBodies: requestBodies(),
    schemas: {
      Lead: LEAD_SCHEMA,
      LeadWithCustomFields: LEAD_WITH_CUSTOM_FIELDS_SCHEMA,
      LeadList: LEAD_LIST_SCHEMA,
      LeadInput: LEAD_INPUT_SCHEMA,
      CreateLeadResponse: CREATE_LEAD_RESPONSE_SCHEMA,
      BulkResponse: BULK_RESPONSE_SCHEMA,
      Webhook: WEBHOOK_SCHEMA,
      SigningSecret: SIGNING_SECRET_SCHEMA,
      RecoverResponse: RECOVER_RESPONSE_SCHEMA,
      LeadCreatedEvent: LEAD_CREATED_EVENT_SCHEMA,
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
  }
}
