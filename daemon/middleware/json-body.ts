import {bodyParser} from '@koa/bodyparser'
import type {Next} from 'koa'

import {AppError, ValidationError} from '../../src/shared/errors.js'
import {checkJsonText} from '../../src/shared/text.js'
import {BULK_ROWS, CUSTOM_FIELDS, isBulkRequest, isCreateRequest} from '../lead-write-requests.js'
import type {AppContext} from '../context.js'
import {parseJsonBytes} from './strict-json.js'

const SINGLE_BODY_LIMIT = '1mb'
const SINGLE_BODY_LIMIT_TEXT = '1 MiB'
const BULK_BODY_LIMIT = '10mb'
const BULK_BODY_LIMIT_TEXT = '10 MiB'
/** The Content-Encodings the body parser can decompress. */
const BODY_ENCODINGS = ['identity', 'gzip', 'deflate', 'br']

const METHODS_WITH_BODY = ['POST', 'PUT', 'PATCH']

/**
 * Parses JSON bodies only: a body of another type or encoding is a 415, malformed JSON (or JSON
 * that cannot be decompressed, is not UTF-8, nests too deep, or holds a prototype key or text no
 * database stores) a 400, and one over the limit (1 MiB, 10 MiB on bulk routes) a 413, all raised for the
 * error envelope.
 */
export function jsonBody() {
  // Read as text byte for byte (latin1 maps each byte to one character), so parseJsonBytes sees
  // the bytes the client sent: the parser's own UTF-8 decoding replaces bytes that are not UTF-8.
  // Named 'binary', Node's own name for latin1: iconv-lite then leaves it to Node's native decoder
  // instead of its table for ISO-8859-1, a loop in JavaScript over every byte of the body.
  const options = {
    enableTypes: ['text'] as Array<'text'>,
    extendTypes: {text: ['application/json']},
    encoding: 'binary',
    onError: rethrowAsRequestError,
  }
  const single = bodyParser({...options, textLimit: SINGLE_BODY_LIMIT})
  const bulk = bodyParser({...options, textLimit: BULK_BODY_LIMIT})
  return async function jsonBodyMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (!METHODS_WITH_BODY.includes(ctx.method)) return next()
    if (ctx.request.length > 0 || ctx.get('transfer-encoding') !== '') {
      if (!ctx.is('application/json')) throw Object.assign(new Error('unsupported media type'), {status: 415})
    }
    const isBulk = isBulkRequest(ctx)
    const parser = isBulk ? bulk : single
    await parser(ctx as never, async () => {
      ctx.request.body = typeof ctx.request.body === 'string' ? parseJsonBytes(ctx.request.body) : {}
      // A bulk row's text is checked with the row, which fails alone (rows are independent), and a
      // lead's custom fields with the lead, which drops an unknown one whatever it holds.
      checkJsonText(ctx.request.body, isBulk ? BULK_ROWS : isCreateRequest(ctx) ? CUSTOM_FIELDS : undefined)
      await next()
    })
  }
}

/** Turns the parser's failures that have a better answer than "not valid JSON" (or a bare 413) into request errors. */
function rethrowAsRequestError(error: Error & {status?: number; code?: string}, ctx: AppContext): never {
  if (error.status === 413) {
    throw new AppError(
      'invalid_request_error',
      413,
      isBulkRequest(ctx)
        ? `Request body is too large: a bulk request takes at most ${BULK_BODY_LIMIT_TEXT} (after decompression); send the rows in more requests.`
        : `Request body is too large: this endpoint takes at most ${SINGLE_BODY_LIMIT_TEXT} (after decompression).`,
    )
  }
  const encoding = ctx.get('content-encoding')
  if (error.status === 415 && /Content-Encoding/i.test(error.message)) {
    throw new AppError('invalid_request_error', 415, `Content-Encoding "${encoding}" is not supported; send the body as ${BODY_ENCODINGS.join(', ')}.`)
  }
  // zlib's errors (Z_DATA_ERROR, Z_BUF_ERROR, ...) carry no HTTP status: the body was not what its encoding says.
  if (error.status === undefined && error.code?.startsWith('Z_')) {
    throw new ValidationError(`Request body could not be decompressed as Content-Encoding "${encoding}".`)
  }
  throw error
}
