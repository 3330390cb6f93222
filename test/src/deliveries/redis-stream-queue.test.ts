import type {ChildProcess} from 'node:child_process'
import {Writable} from 'node:stream'

import {expect} from 'chai'
import {createClient} from 'redis'

import {connectRedis, type RedisConnection} from '../../../src/db/redis.js'
import {FallbackQueue} from '../../../src/deliveries/fallback-queue.js'
import {RedisStreamQueue} from '../../../src/deliveries/redis-stream-queue.js'
import {createLogger} from '../../../src/log/logger.js'
import {describeInMysqlRun} from '../../helpers/backends.js'
import {freePort, killRedis, startRedis} from '../../helpers/local-servers.js'

/** Takes until `count` ids have come out of the queue, from `takers` readers at once. */
async function takeAll(queue: RedisStreamQueue, count: number, takers: number): Promise<string[]> {
  const taken: string[] = []
  const deadline = Date.now() + 5000
  await Promise.all(
    Array.from({length: takers}, async () => {
      while (taken.length < count && Date.now() < deadline) {
        const ids = await queue.take(10, 100)
        taken.push(...ids)
        await queue.ack(ids)
      }
    }),
  )
  return taken
}

/** The Redis dispatch queue on a redis-server of its own, so no other test's deliveries are in its stream. */
describeInMysqlRun('the Redis dispatch queue', function () {
  let redis: ChildProcess
  let connection: RedisConnection
  let queue: RedisStreamQueue
  let port: number
  /** The connections the server has open, this probe's own not counted. */
  const openConnections = async () => {
    const probe = createClient({url: `redis://127.0.0.1:${port}`})
    await probe.connect()
    try {
      return (await probe.clientList()).length - 1
    } finally {
      await probe.close()
    }
  }

  beforeEach(async function () {
    port = await freePort()
    redis = await startRedis(port)
    connection = await connectRedis({mode: 'single', url: `redis://127.0.0.1:${port}`})
    queue = new RedisStreamQueue(connection, 'test-consumer')
  })
  afterEach(async function () {
    await queue.close()
    await connection.close()
    await killRedis(redis)
  })

  // Two workers of one process share its queue; the second's first read comes while the first's reader is still connecting.
  it('serves reads from two callers at once, from the very first one', async function () {
    const results = await Promise.allSettled([queue.take(10, 50), queue.take(10, 50)])
    expect(results.map((result) => (result.status === 'rejected' ? String(result.reason) : 'ok'))).to.deep.equal(['ok', 'ok'])
  })

  it('hands every enqueued id to one of two callers reading at once, each id once', async function () {
    const ids = Array.from({length: 30}, (_, i) => `delivery-${i}`)
    await queue.enqueue(ids)
    const taken = await takeAll(queue, ids.length, 2)
    expect([...taken].sort()).to.deep.equal([...ids].sort())
    expect(queue.health().failingSinceMs).to.equal(null)
  })

  // A reader destroyed while it connects still connects: one that close() dropped must be ended once it has.
  it('leaves no connection open when closed while its reader is still connecting', async function () {
    const before = await openConnections()
    const take = queue.take(10, 1000)
    await queue.close()
    expect(await take).to.deep.equal([])
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await openConnections()).to.equal(before)
  })

  // What a worker's stop does: the read it is blocked in ends at once, as a stop and not an outage.
  it('ends a blocked read at once when closed, empty, with no warning and no failure, and serves reads begun afterwards', async function () {
    const warnings: string[] = []
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        warnings.push(chunk.toString('utf8'))
        done()
      },
    })
    const fallback = new FallbackQueue(queue, createLogger('warn', sink))
    await fallback.take(10, 10)
    const startedAt = Date.now()
    const take = fallback.take(10, 5000)
    await new Promise((resolve) => setTimeout(resolve, 100))
    await fallback.close()
    expect(await take).to.deep.equal([])
    expect(Date.now() - startedAt, 'the read ended well before its 5 s wait').to.be.below(2500)
    expect(warnings).to.deep.equal([])
    expect(fallback.health().failingSinceMs).to.equal(null)
    // Another worker of the process reads on: a read begun after the close opens a new reader.
    await fallback.enqueue(['after-close'])
    expect(await fallback.take(10, 1000)).to.deep.equal(['after-close'])
  })
})
