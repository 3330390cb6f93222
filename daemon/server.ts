import http from 'node:http'
import type {AddressInfo} from 'node:net'

import type {Config} from '../src/config/config.js'
import type {DeliveryWorker, WorkerOptions} from '../src/deliveries/delivery-worker.js'
import type {Logger} from '../src/log/logger.js'
import {ConfigError} from '../src/shared/errors.js'
import {createServices, type ServiceOptions, type Services} from '../src/services.js'
import {createOpsApp} from './ops-app.js'
import {answerClientErrors, answerConnect} from './client-errors.js'
import {WriterWatch, writerName} from './writer-watch.js'

/** How often remembered key uses are written to api_keys.last_used_at. */
const LAST_USED_FLUSH_MS = 15_000
/** How often Idempotency-Key records past their 24 h are deleted. */
const IDEMPOTENCY_PURGE_MS = 10 * 60_000
/** How long open connections get to finish their request once the daemon stops listening. */
const CONNECTION_DRAIN_MS = 3000
/** How often a stopping daemon closes the connections that went idle since it stopped listening. */
const IDLE_CLOSE_INTERVAL_MS = 50
/** How long in-flight requests get to finish after SIGTERM/SIGINT before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000

export const ROLES = ['all', 'api', 'worker'] as const
/** `api` serves HTTP, `worker` delivers webhooks, `all` does both in one process. */
export type Role = (typeof ROLES)[number]

export interface DaemonOptions extends ServiceOptions {
  role?: Role
  worker?: WorkerOptions
}

export interface RunningDaemon {
  /** Where the daemon answers: the API, or for a worker-only daemon its probes and metrics. */
  readonly url: string
  readonly services: Services
  readonly worker: DeliveryWorker | null
  /** Stops accepting connections, lets in-flight requests finish, flushes and closes stores. */
  stop(): Promise<void>
}

/** Builds the services, serves the API on the configured host and port, and runs the delivery worker, as the role says. */
export async function startDaemon(config: Config, logger: Logger, options: DaemonOptions = {}): Promise<RunningDaemon> {
  const {role = 'all', worker: workerOptions, ...serviceOptions} = options
  const services = await createServices(config, {
    logger,
    requireCurrentSchema: config.database.client === 'mysql',
    requireWritable: config.database.client === 'mysql',
    // A replica started during a Redis outage serves the API (degraded) instead of failing to start.
    redisUnreachable: 'degrade',
    ...serviceOptions,
  })
  if (config.webhookAllowHosts.length > 0) {
    logger.warn(
      {hosts: config.webhookAllowHosts},
      'LEADS_WEBHOOK_ALLOW_HOSTS is set: these hosts bypass the private-address block; use only for development and tests',
    )
  }
  const galera = await services.galera()
  if (galera) {
    // Which node each daemon writes to is in each one's log; they must all name the same node.
    logger.warn(
      galera,
      `the database is a Galera cluster of ${galera.nodes} nodes: every daemon must write to one node at a time (a balancer with one active node and the others backup); writing to several nodes at once is not supported (docs/operations.md, "Running on a Galera cluster")`,
    )
  }

  // On a Galera node, each daemon records the node it writes through; several at once is reported.
  const writers = await services.galeraWriters(writerName(role), role)
  const watch = writers ? new WriterWatch(writers, logger) : null
  if (watch) {
    await watch.start()
    services.metrics.reportWriterNodes(() => watch.multiWriterNodes)
  }

  const every = everyFactory(logger)
  // A worker-only daemon still answers probes and metrics on LEADS_PORT, for its orchestrator. The
  // API's routes, schemas and document are loaded only by a daemon that serves them, so a worker
  // (restarted, or one more added under load) starts delivering sooner.
  const app = role === 'worker' ? createOpsApp(services, logger) : (await import('./app.js')).createApp(services, logger)
  const handle = app.callback()
  const server = http.createServer(handle)
  server.keepAliveTimeout = 65_000
  answerClientErrors(server, services.limiter, logger)
  server.on('connect', answerConnect(handle))
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(config.port, config.host, () => resolve())
    })
  } catch (error) {
    await watch?.stop()
    await services.close()
    throw listenError(error, config)
  }
  const worker = role === 'api' ? null : services.createWorker(workerOptions)
  worker?.start()

  const timers = [
    every(LAST_USED_FLUSH_MS, () => services.keyAuthenticator.flushLastUsed(), 'last-used flush failed'),
    every(IDEMPOTENCY_PURGE_MS, () => services.idempotency.purgeExpired(), 'idempotency purge failed'),
  ]

  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  let stopping: Promise<void> | null = null
  return {
    url: `http://${host}:${address.port}`,
    services,
    worker,
    stop() {
      stopping ??= (async () => {
        for (const timer of timers) clearInterval(timer)
        await new Promise<void>((resolve) => {
          // A keep-alive connection whose answer goes out after close() stays open, idle: it is
          // closed as soon as it is idle rather than held until the drain time.
          const closeIdle = setInterval(() => server.closeIdleConnections(), IDLE_CLOSE_INTERVAL_MS)
          // A client that never finishes its request (an upload cut off by a 413) must not hold shutdown.
          const drain = setTimeout(() => {
            logger.warn('closing the connections still open at the drain time')
            server.closeAllConnections()
          }, CONNECTION_DRAIN_MS)
          drain.unref()
          server.close(() => {
            clearInterval(closeIdle)
            clearTimeout(drain)
            resolve()
          })
          server.closeIdleConnections()
        })
        await worker?.stop()
        await watch?.stop()
        await services.close()
      })()
      return stopping
    },
  }
}

/**
 * A listen address that is not this machine's, or a port in use or not allowed, as one line
 * naming the variable to fix, as every other bad setting stops start-up.
 */
function listenError(error: unknown, config: Config): unknown {
  const code = (error as {code?: string}).code
  const next = config.port === 0 ? 8080 : config.port + 1
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EADDRNOTAVAIL') {
    const reason = code === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : 'does not resolve to an address'
    return new ConfigError('LEADS_HOST', `${config.host} ${reason}`, 'use one of its addresses: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)')
  }
  if (code === 'EADDRINUSE') {
    return new ConfigError(
      'LEADS_PORT',
      `${config.port} on ${config.host} is in use by another program (a leads daemon already running?)`,
      `stop it, or choose another port: LEADS_PORT=${next} npm start (or leads daemon)`,
    )
  }
  if (code === 'EACCES') {
    return new ConfigError('LEADS_PORT', `${config.port} on ${config.host} needs privileges this user lacks`, 'choose a port above 1023, e.g. LEADS_PORT=8080')
  }
  return error
}

/** Runs a maintenance task on an interval that does not keep the process alive; failures are logged. */
function everyFactory(logger: Logger) {
  return (intervalMs: number, task: () => Promise<unknown>, failure: string): NodeJS.Timeout => {
    const timer = setInterval(() => {
      task().catch((error: Error) => logger.warn({err: error}, failure))
    }, intervalMs)
    timer.unref()
    return timer
  }
}

/** Stops the daemon on SIGTERM or SIGINT; a second signal, or the grace period running out, exits at once. */
export function stopOnSignals(daemon: RunningDaemon, logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', onSignal)
      process.off('SIGINT', onSignal)
      logger.info({signal}, 'shutting down')
      const force = setTimeout(() => {
        logger.warn('shutdown grace period over; exiting with requests still open')
        process.exit(1)
      }, SHUTDOWN_GRACE_MS)
      force.unref()
      process.once('SIGTERM', () => process.exit(1))
      process.once('SIGINT', () => process.exit(1))
      daemon.stop().then(
        () => {
          logger.info('stopped')
          resolve()
        },
        (error: Error) => {
          logger.error({err: error}, 'shutdown failed')
          process.exit(1)
        },
      )
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
  })
}
