import http from 'node:http'
import type {Socket} from 'node:net'
import type {Duplex} from 'node:stream'

import type {Logger} from '../src/log/logger.js'
import type {RateDecision, RequestLimiter} from '../src/ratelimit/request-limiter.js'

/** Node's parser errors worth their own status; anything else it refuses is a 400. */
const STATUS_BY_CODE: Record<string, {status: number; reason: string; message: string}> = {
  HPE_HEADER_OVERFLOW: {status: 431, reason: 'Request Header Fields Too Large', message: 'Request headers are too large (16 KiB at most).'},
  ERR_HTTP_REQUEST_TIMEOUT: {status: 408, reason: 'Request Timeout', message: 'The request was not received in time.'},
  // A method outside Node's list (which has every registered one) is not an HTTP method the service knows (RFC 9110 15.6.2).
  HPE_INVALID_METHOD: {status: 501, reason: 'Not Implemented', message: 'HTTP method not recognised by this API.'},
}
const BAD_REQUEST = {status: 400, reason: 'Bad Request', message: 'Malformed HTTP request.'}

/**
 * Answers requests Node's HTTP parser refuses before Koa sees them (unknown method, headers over
 * 16 KiB, a NUL in a header) with the API's error envelope and RateLimit headers, counted in
 * the client address's keyless bucket like any request without a valid key, then closes.
 */
export function answerClientErrors(limiter: RequestLimiter, logger: Logger) {
  return (error: Error & {code?: string}, socket: Socket): void => {
    const address = socket.remoteAddress ?? 'unknown'
    limiter
      .consumeAnonymous(address)
      .catch(() => null)
      .then((decision) => {
        if (!socket.writable) return
        socket.end(response(STATUS_BY_CODE[error.code ?? ''] ?? BAD_REQUEST, decision))
      })
      .catch((failure: Error) => logger.debug({err: failure}, 'could not answer a malformed request'))
  }
}

function response(answer: {status: number; reason: string; message: string}, decision: RateDecision | null): string {
  const body = JSON.stringify({error: {type: 'invalid_request_error', code: answer.status, message: answer.message}})
  const headers = [
    `HTTP/1.1 ${answer.status} ${answer.reason}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ]
  if (decision) {
    headers.push(`RateLimit-Limit: ${decision.limit}`, `RateLimit-Remaining: ${decision.remaining}`, `RateLimit-Reset: ${decision.resetSeconds}`)
  }
  return `${headers.join('\r\n')}\r\n\r\n${body}`
}

/**
 * Node hands a CONNECT request only to 'connect' listeners, and without one closes the socket
 * unanswered. This one gives it to the app like any other method, which answers it as it does
 * TRACE: 405 with Allow on a known path, otherwise 404 (401 without credentials). The
 * connection is closed after the answer: nothing is tunnelled.
 */
export function answerConnect(handle: (request: http.IncomingMessage, response: http.ServerResponse) => void) {
  return (request: http.IncomingMessage, socket: Duplex): void => {
    const response = new http.ServerResponse(request)
    response.shouldKeepAlive = false
    response.assignSocket(socket as Socket)
    response.on('finish', () => {
      response.detachSocket(socket as Socket)
      socket.end()
    })
    handle(request, response)
  }
}
