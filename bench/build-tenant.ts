/**
 * A customer and an internal key for a build's daemon, made by that checkout's own code in the
 * database its daemon uses (`env` with the build's settings). A build whose settings name a
 * database of its own (LEADS_DATABASE_URL=…) then runs on the schema its own migrations make, as
 * it would in production: compare a schema change against the build before it that way, since an
 * older build on the newer schema pays for the newer tables too.
 */
import path from 'node:path'
import {pathToFileURL} from 'node:url'

import type {createServices as CreateServices} from '../src/services.js'
import type {loadConfig as LoadConfig} from '../src/config/config.js'
import type {createLogger as CreateLogger} from '../src/log/logger.js'

export interface BuildTenant {
  customerId: string
  token: string
  /** The headers of a request as the customer: its token and id. */
  headers: Record<string, string>
}

export async function buildTenant(root: string, env: Record<string, string>, name: string): Promise<BuildTenant> {
  const load = async <T>(file: string) => (await import(pathToFileURL(path.join(root, 'dist', file)).href)) as T
  const {createServices} = await load<{createServices: typeof CreateServices}>('src/services.js')
  const {loadConfig} = await load<{loadConfig: typeof LoadConfig}>('src/config/config.js')
  const {createLogger} = await load<{createLogger: typeof CreateLogger}>('src/log/logger.js')
  const services = await createServices(loadConfig(env), {logger: createLogger('silent'), autoMigrate: true})
  try {
    const customer = await services.customers.create({name})
    const {token} = await services.keys.issue({customerId: customer.id, scopes: ['public_api:leads:write'], internal: true})
    return {customerId: customer.id, token, headers: {authorization: `Bearer ${token}`, 'x-customer-id': customer.id}}
  } finally {
    await services.close()
  }
}
