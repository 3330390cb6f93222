import type {AppContext} from './context.js'

const CREATE_PATH = '/api/agents/crm/leads'
const BULK_PATH = '/api/agents/crm/leads/bulk'
/** The bulk body's key that holds its rows. */
export const BULK_ROWS = 'leads'
/** A lead's key that holds its custom fields. */
export const CUSTOM_FIELDS = 'custom_fields'

/**
 * The bulk endpoint has its own rate-limit bucket and body limit. Routers are strict and
 * case-sensitive, so this exact comparison and the route can never disagree.
 */
export function isBulkRequest(ctx: AppContext): boolean {
  return ctx.method === 'POST' && ctx.path === BULK_PATH
}

/** A single create, whose body is one lead (compared as isBulkRequest compares). */
export function isCreateRequest(ctx: AppContext): boolean {
  return ctx.method === 'POST' && ctx.path === CREATE_PATH
}
