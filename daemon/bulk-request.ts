import type {AppContext} from './context.js'

const BULK_PATH = '/api/agents/crm/leads/bulk'
/** The bulk body's key that holds its rows. */
export const BULK_ROWS = 'leads'

/**
 * The bulk endpoint has its own rate-limit bucket and body limit. Routers are strict and
 * case-sensitive, so this exact comparison and the route can never disagree.
 */
export function isBulkRequest(ctx: AppContext): boolean {
  return ctx.method === 'POST' && ctx.path === BULK_PATH
}
