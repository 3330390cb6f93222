import http from 'node:http'

import type {TestTenant} from './fixtures.js'
import type {TestDaemon, TestResponse} from './test-daemon.js'

/** POSTs JSON as the tenant, with an optional Idempotency-Key. */
export function postJson(daemon: TestDaemon, tenant: TestTenant, path: string, body: unknown, idempotencyKey?: string): Promise<TestResponse> {
  const headers: Record<string, string> = {'content-type': 'application/json'}
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
  return daemon.request(path, {
    method: 'POST',
    token: tenant.token,
    customerId: tenant.customer.id,
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

/** How many leads and lead.created events the customer has. */
export async function counts(daemon: TestDaemon, tenant: TestTenant): Promise<{leads: number; events: number}> {
  const [leads] = (await daemon.db('leads').where({customer_id: tenant.customer.id}).count({n: '*'})) as Array<{n: number | string}>
  const [events] = (await daemon.db('events').where({customer_id: tenant.customer.id}).count({n: '*'})) as Array<{n: number | string}>
  return {leads: Number(leads?.n), events: Number(events?.n)}
}

/** GET from a given loopback source address, as a distinct client would; its status. */
export function getFrom(localAddress: string, url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, {localAddress, headers}, (response) => {
        response.resume()
        resolve(response.statusCode ?? 0)
      })
      .on('error', reject)
  })
}
