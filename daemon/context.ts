import type {DefaultContext, DefaultState, ParameterizedContext} from 'koa'

import type {ApiKey} from '../src/keys/key-types.js'
import type {Logger} from '../src/log/logger.js'

/** What middleware learns about a request and later middleware relies on. */
export interface AppState extends DefaultState {
  requestId: string
  log: Logger
  /** The key of a valid bearer token; absent when the token is missing or invalid. */
  key?: ApiKey
  /** Set once authentication passed: the customer the request acts for. */
  customerId?: string
}

export type AppContext = ParameterizedContext<AppState, DefaultContext>
