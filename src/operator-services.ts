import {openBacking} from './backing.js'
import type {Config} from './config/config.js'
import {resolveMasterKey} from './config/master-key.js'
import {type OperatorServices, serviceParts} from './service-parts.js'
import {systemClock} from './shared/clock.js'
import {storeParts} from './stores.js'

/**
 * Runs `work` with the services it names (and what they are built from) on the configured
 * database, then closes everything. An operator command names what it uses, so `leads keys list`
 * loads the keys store and service and none of the daemon's modules. Redis is connected only when
 * asked for, so commands that never read it work while it is down.
 */
export async function withOperatorServices<K extends keyof OperatorServices, T>(
  config: Config,
  needs: readonly K[],
  options: {redis: boolean},
  work: (services: Pick<OperatorServices, K>) => Promise<T>,
): Promise<T> {
  const masterKey = resolveMasterKey(config)
  const {db, redis} = await openBacking(config, {connectRedis: options.redis})
  const parts = serviceParts({db, config, masterKey, redis, stores: storeParts(db, {statementTimeoutMs: config.statementTimeoutMs}), clock: systemClock})
  try {
    const services = Object.fromEntries(await Promise.all(needs.map(async (name) => [name, await parts(name)] as const))) as unknown as Pick<
      OperatorServices,
      K
    >
    return await work(services)
  } finally {
    await parts
      .ifBuilt('queue')
      ?.then((queue) => queue.close())
      .catch(() => undefined)
    if (redis) await redis.close().catch(() => undefined)
    await db.destroy()
  }
}
