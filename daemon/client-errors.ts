import {randomUUID} from 'node:crypto'
import http, {type Server} from 'node:http'
import type {Socket} from 'node:net'
import type {Duplex} from 'node:stream'

import type {Logger} from '../src/log/logger.js'
import type {RateDecision, RequestLimiter} from '../src/ratelimit/request-limiter.js'

/** Node's parser errors worth their own status; anything else it refuses is a 400. */
const STATUS_BY_CODE: Record<string, {status: number; reason: string; message: string}> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    message: 'The request line and headers are too large (16 KiB at most, the URL included): shorten the URL or the headers.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {status: 408, reason: 'Request Timeout', message: 'The request was not received in time.'},
  // A method outside Node's list (which has every registered one) is not an HTTP method the service knows (RFC 9110 15.6.2).
  HPE_INVALID_METHOD: {status: 501, reason: 'Not Implemented', message: 'HTTP method not recognised by this API.'},
}
const BAD_REQUEST = {status: 400, reason: 'Bad Request', message: 'Malformed HTTP request.'}

/**
 * The client ended the connection (a reset, or a close in the middle of a request): there is no
 * request to answer, and nobody to answer it to.
 */
const CLOSED_BY_CLIENT = new Set(['ECONNRESET', 'EPIPE', 'HPE_INVALID_EOF_STATE'])

/**
 * Handles the connection errors Node reports as `clientError`.
 *
 * While the app holds a request on the connection (an upload cut off mid-body, a request timing
 * out), the request was already counted when it came in (against its key, or its address without
 * one) and its access line records the abort: the connection is only closed. Counting it again
 * against the address would let any client's dropped uploads use up the keyless budget of every
 * customer behind the same address. A connection the client closes between requests is closed
 * too, uncounted. Requests Node's parser refuses before the app sees them (an unknown method,
 * headers over 16 KiB, a NUL in a header) are answered with the API's error envelope and
 * RateLimit headers, counted in the address's keyless budget (their token is never read), then
 * closed.
 */
export function answerClientErrors(server: Server, limiter: RequestLimiter, logger: Logger): void {
  const requestsOpen = new WeakMap<Socket, number>()
  server.on('request', (request, response) => {
    const socket = request.socket
    requestsOpen.set(socket, (requestsOpen.get(socket) ?? 0) + 1)
    response.once('close', () => requestsOpen.set(socket, (requestsOpen.get(socket) ?? 1) - 1))
  })
  server.on('clientError', (error: Error & {code?: string}, socket: Socket) => {
    const code = error.code ?? 'unknown'
    if ((requestsOpen.get(socket) ?? 0) > 0 || CLOSED_BY_CLIENT.has(code)) {
      socket.destroy()
      return
    }
    const address = socket.remoteAddress ?? 'unknown'
    const answer = STATUS_BY_CODE[code] ?? BAD_REQUEST
    // Every answer carries a request id, this one too: the caller quotes it, the log line holds it.
    const requestId = randomUUID()
    // Only the code: the error's rawPacket holds the request's bytes, an Authorization header included.
    logger.info({request_id: requestId, remote_address: address, code, status: answer.status}, 'request refused by the HTTP parser')
    limiter
      .consumeAnonymous(address)
      .catch(() => null)
      .then((decision) => {
        if (!socket.writable) return void socket.destroy()
        socket.end(response(answer, requestId, decision))
      })
      .catch((failure: Error) => logger.debug({err: failure}, 'could not answer a malformed request'))
  })
}

function response(answer: {status: number; reason: string; message: string}, requestId: string, decision: RateDecision | null): string {
  const body = JSON.stringify({error: {type: 'invalid_request_error', code: answer.status, message: answer.message}})
  const headers = [
    `HTTP/1.1 ${answer.status} ${answer.reason}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
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
