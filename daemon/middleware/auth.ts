import type {Next} from 'koa'

import {ENDPOINT_SCOPES, type Endpoint} from '../../src/keys/scopes.js'
import {AuthenticationError, AuthorizationError} from '../../src/shared/errors.js'
import {UUID_PATTERN} from '../../src/shared/validate.js'
import type {AppContext} from '../context.js'

/** An Authorization header carrying a bearer token; the token is its group. */
export const BEARER = /^Bearer +(\S+)$/i

/** Rejects a request without a valid token (401) or for another customer than the key's (403). */
export async function requireAuthentication(ctx: AppContext, next: Next): Promise<void> {
  const authorization = ctx.get('authorization')
  if (authorization === '') {
    throw new AuthenticationError('Missing bearer token. Send "Authorization: Bearer svc_..." with the key the operator issued.')
  }
  if (!BEARER.test(authorization)) {
    throw new AuthenticationError('Malformed Authorization header. Use "Authorization: Bearer svc_<64 hex>".')
  }
  const key = ctx.state.key
  if (!key) {
    throw new AuthenticationError('Invalid, revoked or expired API token. Ask the operator for a valid key.')
  }
  const customerId = ctx.get('x-customer-id').trim()
  if (customerId === '') {
    throw new AuthenticationError('Missing x-customer-id header. Send the UUID of the customer your key is locked to.')
  }
  if (!UUID_PATTERN.test(customerId)) {
    throw new AuthenticationError('Malformed x-customer-id header. It must be the UUID of your customer.')
  }
  if (customerId.toLowerCase() !== key.customerId) {
    throw new AuthorizationError('This key is locked to another customer. Send the x-customer-id the key was issued for.')
  }
  ctx.state.customerId = key.customerId
  await next()
}

/** Route middleware: the key must carry the scope ENDPOINT_SCOPES names for the endpoint. */
export function requireScope(endpoint: Endpoint) {
  const scope = ENDPOINT_SCOPES[endpoint]
  return async function requireScopeMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (!ctx.state.key?.scopes.includes(scope)) {
      throw new AuthorizationError(`This key lacks the scope ${scope}, which ${endpoint.split(' ')[0]} ${ctx.path} requires.`)
    }
    await next()
  }
}
