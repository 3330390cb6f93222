import type {Next} from 'koa'

import type {Metrics} from '../../src/metrics/metrics.js'
import type {AppContext} from '../context.js'

/** Counts and times every request by route template (never the raw path: ids would explode the labels). */
export function recordMetrics(metrics: Metrics) {
  return async function recordMetricsMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const stopTimer = metrics.httpDuration.startTimer()
    try {
      await next()
    } finally {
      const labels = {method: ctx.method, route: (ctx as {_matchedRoute?: string})._matchedRoute ?? 'unmatched', status: String(ctx.status)}
      metrics.httpRequests.inc(labels)
      stopTimer(labels)
    }
  }
}
