import {failedStatementOf} from '../db/failed-statement.js'
import {withoutSecrets} from '../shared/secret-text.js'

/** What a log or a message keeps of an error: never a statement's values. */
interface SafeError {
  type: string
  code?: string
  message: string
  /** The verb and table of the batch statement it came from (failed-statement.ts). */
  statement?: string
  stack?: string
}

const MAX_MESSAGE = 300
/** MySQL reasons that quote the offending value (a lead's email in a duplicate key, say). */
const QUOTED_VALUES = [/(Duplicate entry )'.*?'( for key)/s, /(Incorrect \w+ value: )'.*?'( for)/s, /(Data truncated for column '[^']*' at row )\d+/s]

/**
 * The part of an error's message that may be logged or shown. knex prefixes the driver's reason
 * with the whole statement, values inlined ("insert into `leads` … values ('ada@…') - reason"),
 * and some MySQL reasons quote the value: only the reason is kept, with quoted values and
 * secrets masked.
 */
export function safeMessage(error: unknown): string {
  const {message, sqlMessage} = (error ?? {}) as {message?: unknown; sqlMessage?: unknown}
  const full = typeof sqlMessage === 'string' ? sqlMessage : String(message ?? error)
  let reason = isStatementError(error) && full.includes(' - ') ? full.slice(full.lastIndexOf(' - ') + 3) : full
  for (const pattern of QUOTED_VALUES) reason = reason.replace(pattern, (_match, before: string, after = '') => `${before}'…'${after}`)
  reason = withoutSecrets(reason)
  return reason.length > MAX_MESSAGE ? `${reason.slice(0, MAX_MESSAGE)}…` : reason
}

/** An error as every log line records it (pino's `err` serializer): type, code, safe message, the kind of statement it came from, a short stack without the message line. */
export function safeError(error: unknown): SafeError {
  const {name, code, stack} = (error ?? {}) as {name?: unknown; code?: unknown; stack?: unknown}
  const statement = failedStatementOf(error)
  return {
    type: typeof name === 'string' ? name : typeof error,
    ...(typeof code === 'string' ? {code} : {}),
    message: safeMessage(error),
    ...(statement === undefined ? {} : {statement}),
    // The stack opens with the message, statement included (over several lines when the statement
    // or a value has line breaks); only the frames are safe.
    ...(typeof stack === 'string'
      ? {
          stack: stack
            .split('\n')
            .filter((line) => /^\s+at /.test(line))
            .slice(0, 7)
            .join('\n'),
        }
      : {}),
  }
}

/** Whether the error came from running a statement (knex or a driver), whose message may hold values. */
function isStatementError(error: unknown): boolean {
  const {sql, code, sqlMessage} = (error ?? {}) as {sql?: unknown; code?: unknown; sqlMessage?: unknown}
  return typeof sql === 'string' || typeof sqlMessage === 'string' || (typeof code === 'string' && (code.startsWith('ER_') || code.startsWith('SQLITE_')))
}
