/** Every scope a key can carry. */
export const SCOPES = ['public_api:leads:read', 'public_api:leads:write', 'public_api:webhooks:manage'] as const
export type Scope = (typeof SCOPES)[number]

/**
 * The one table of which scope each endpoint needs ("METHOD path" as the router declares it).
 * Each route names its entry (requireScope), and the auth-matrix and OpenAPI tests walk this
 * table, so an endpoint without a scope or without those tests shows up there.
 */
export const ENDPOINT_SCOPES = {
  'GET /api/agents/crm/leads': 'public_api:leads:read',
  'POST /api/agents/crm/leads': 'public_api:leads:write',
  'POST /api/agents/crm/leads/bulk': 'public_api:leads:write',
  'POST /api/agents/crm/lead-webhooks': 'public_api:webhooks:manage',
  'GET /api/agents/crm/lead-webhooks': 'public_api:webhooks:manage',
  'PATCH /api/agents/crm/lead-webhooks/:id': 'public_api:webhooks:manage',
  'DELETE /api/agents/crm/lead-webhooks/:id': 'public_api:webhooks:manage',
  'POST /api/agents/crm/lead-webhooks/:id/recover': 'public_api:webhooks:manage',
} as const satisfies Record<string, Scope>

export type Endpoint = keyof typeof ENDPOINT_SCOPES

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value)
}
