import http from 'node:http'
import net from 'node:net'

import type {TestResponse} from './test-daemon.js'

// The API document and its parts: JSON of any shape, read field by field.
export type Json = Record<string, any>

/** Inlines `#/components/...` references so ajv (or a generator) can take a schema on its own. */
export function resolveRefs(node: unknown, document: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(item, document))
  if (node === null || typeof node !== 'object') return node
  const ref = (node as Json)['$ref']
  if (typeof ref === 'string')
    return resolveRefs(
      ref
        .slice(2)
        .split('/')
        .reduce((at: Json, key) => at[key], document),
      document,
    )
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, resolveRefs(value, document)]))
}

/**
 * A request with any method and headers (fetch() refuses TRACE and some header values), as a
 * TestResponse; from `localAddress` (any of 127/8) to be another client.
 */
export function rawRequest(url: string, method: string, headers: Record<string, string> = {}, body?: string, localAddress?: string): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {method, headers, localAddress, agent: false}, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve(asTestResponse(response.statusCode ?? 0, response.headers, text)))
    })
    request.on('error', reject)
    request.end(body)
  })
}

/** A request line with a method HTTP does not have, which Node's parser refuses before Koa. */
export function unknownMethod(url: string, path: string, method = 'BREW', localAddress?: string): Promise<TestResponse> {
  const {hostname, port} = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = net.connect({port: Number(port), host: hostname, localAddress}, () => socket.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`))
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('end', () => {
      const [head = '', text = ''] = answer.split('\r\n\r\n')
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      resolve(asTestResponse(Number(statusLine.split(' ')[1]), headers, text))
    })
    socket.on('error', reject)
  })
}

function asTestResponse(status: number, headers: http.IncomingHttpHeaders, text: string): TestResponse {
  const list = new Headers()
  for (const [name, value] of Object.entries(headers)) if (typeof value === 'string') list.set(name, value)
  let body: unknown = null
  try {
    body = JSON.parse(text)
  } catch {
    body = null
  }
  return {status, headers: list, body, text}
}
