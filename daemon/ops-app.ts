import Koa from 'koa'

import type {Logger} from '../src/log/logger.js'
import type {Services} from '../src/services.js'
import type {AppState} from './context.js'
import {errorEnvelope} from './middleware/errors.js'
import {recordMetrics} from './middleware/metrics.js'
import {requestContext} from './middleware/request-context.js'
import {healthRoutes} from './routes/health.js'

/** What a worker-only daemon serves: the probes and metrics, nothing of the API. */
export function createOpsApp(services: Services, logger: Logger): Koa<AppState> {
  const app = new Koa<AppState>({proxy: false})
  app.silent = true
  app.use(requestContext(logger))
  app.use(recordMetrics(services.metrics))
  app.use(errorEnvelope)
  app.use(healthRoutes(services).routes())
  return app
}
