import type {Next} from 'koa'
import {unescape as unescapeQuery} from 'node:querystring'

import {ValidationError} from '../../src/shared/errors.js'
import type {AppContext} from '../context.js'

/**
 * Refuses a query parameter on an endpoint that takes none, naming it: a setting sent in the URL
 * instead of the body (`POST /leads/bulk?dry_run=true`) would otherwise be ignored, and the
 * request would do what it was not asked to. `where` says where the endpoint's settings go.
 */
export function noQueryParameters(where = 'it takes none') {
  return async (ctx: AppContext, next: Next) => {
    const first = ctx.querystring.split('&').find((pair) => pair !== '')
    if (first !== undefined) {
      const at = first.indexOf('=')
      const name = unescapeQuery((at === -1 ? first : first.slice(0, at)).replaceAll('+', ' '))
      throw new ValidationError(`query parameter "${name}" is not one of this endpoint's: ${where}`, name)
    }
    await next()
  }
}
