import type {AttemptOutcome} from './delivery-types.js'
import type {SendResult} from './sender.js'

/**
 * What an attempt's result means for the delivery: done, try again, or stop (the spec's retry
 * rules). A failure that would be retried is `final` when it was the delivery's last attempt.
 */
export function attemptOutcome(result: SendResult, lastAttempt: boolean): AttemptOutcome {
  if (result.kind === 'blocked') return 'terminal'
  if (result.kind === 'response' && result.statusCode >= 200 && result.statusCode < 300) return 'success'
  // Redirects are neither followed nor retried.
  if (result.kind === 'response' && result.statusCode >= 300 && result.statusCode < 400) return 'terminal'
  return lastAttempt ? 'final' : 'retry'
}

/** The one-line reason kept as a failed delivery's last error. */
export function describeResult(result: SendResult): string {
  return result.kind === 'response' ? `HTTP ${result.statusCode}` : result.error
}
