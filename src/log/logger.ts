import {pino, type Logger} from 'pino'

export type {Logger}

/**
 * Paths pino blanks out wherever they appear in a log object. Request logs never include
 * headers or bodies in the first place; this is the second line of defence for secrets.
 */
export const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'masterKey',
  '*.masterKey',
  'apiToken',
  '*.apiToken',
  '*.*.apiToken',
]

/** JSON-lines logger on stdout (or the given destination) with secrets redacted. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {level, redact: {paths: REDACTED_PATHS, censor: '[redacted]'}, base: {service: 'leads'}}
  return destination ? pino(options, destination as never) : pino(options)
}
