import {createRequire} from 'node:module'

import type {Logger} from 'pino'

import {safeError} from './safe-error.js'

export type {Logger}

/**
 * Paths pino blanks out wherever they appear in a log object. Request logs never include
 * headers or bodies in the first place; this is the second line of defence for secrets.
 */
const REDACTED_PATHS = [
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

/**
 * JSON-lines logger on stdout (or the given destination) with secrets redacted. Every error
 * logged under `err`, on any path (HTTP, worker, sweeper, CLI), goes through safeError, so no
 * statement's values (a lead's email or phone) reach the log.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  // Required here: operator commands log nothing and need not load pino at start-up.
  const {pino} = createRequire(import.meta.url)('pino') as typeof import('pino')
  const options = {level, redact: {paths: REDACTED_PATHS, censor: '[redacted]'}, base: {service: 'leads'}, serializers: {err: safeError}}
  return destination ? pino(options, destination as never) : pino(options)
}

/**
 * Where the daemon logs: at a terminal, lines for people (pino-pretty: time, level, message and
 * the fields); anywhere else (a file, a pipe, a log collector) stdout as JSON lines.
 */
export async function logDestination(stdout: NodeJS.WriteStream = process.stdout): Promise<NodeJS.WritableStream | undefined> {
  if (!stdout.isTTY) return undefined
  const {default: pretty} = await import('pino-pretty')
  return pretty({colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service', sync: true})
}
