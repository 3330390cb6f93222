/**
 * The floor under a single create as a load client sees it: the HTTP hop and the database's
 * transaction, nothing else. A plain node:http server in its own process (spawned by
 * bench/push-wrk.ts, as the daemon is), where every POST is one floor transaction (begin, a lead,
 * its lead.created event, commit) into copies of the service's tables through a pool of
 * CONNECTIONS (bench/push-floor.ts), answered 201 with a small JSON body.
 *
 * The rows are built beforehand, by the service's own code: between bursts the bench asks over IPC
 * for a stock of them (FloorRequest), so building them is not on the floor's clock, as in
 * push-floor.ts. A request that finds the stock empty builds its own, and is counted
 * (FloorReport). The floor's tables are dropped when the bench stops the server or goes away.
 * Environment: LEADS_BENCH_MYSQL_URL, LEADS_BENCH_FLOOR_PORT.
 */
import http from 'node:http'

import {type FloorTransaction, openFloor} from './push-floor.js'

/** From the bench: have at least `stock` transactions built (0 only asks for a report). */
export interface FloorRequest {
  stock: number
}

/** To the bench: once listening, then in answer to each FloorRequest. */
export interface FloorReport {
  stocked: number
  served: number
  builtOnDemand: number
}

/** As many connections as wrk keeps requests in flight at c=16. */
const CONNECTIONS = 16
const BODY = '{"status":"created"}'

const url = process.env['LEADS_BENCH_MYSQL_URL']
const port = Number(process.env['LEADS_BENCH_FLOOR_PORT'])
const send = process.send?.bind(process)
if (!url || !port || !send)
  throw new Error('push-floor-server runs as bench/push-wrk.ts spawns it: with an IPC channel, LEADS_BENCH_MYSQL_URL and LEADS_BENCH_FLOOR_PORT')

const floor = await openFloor(url, 'service', CONNECTIONS)
const stock: FloorTransaction[] = []
let built = 0
const counts = {served: 0, builtOnDemand: 0}
const report = () => send({stocked: stock.length, ...counts} satisfies FloorReport)

function take(): FloorTransaction {
  const transaction = stock.pop()
  if (transaction) return transaction
  counts.builtOnDemand++
  return floor.build(built++)
}

const server = http.createServer((request, response) => {
  if (request.method !== 'POST') {
    response.writeHead(405).end()
    return
  }
  request.resume()
  request.once('end', () => {
    floor.run(take()).then(
      () => {
        counts.served++
        response.writeHead(201, {'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY)}).end(BODY)
      },
      (error: unknown) => {
        const body = JSON.stringify({error: String(error)})
        response.writeHead(500, {'content-type': 'application/json', 'content-length': Buffer.byteLength(body)}).end(body)
      },
    )
  })
})

process.on('message', (message: FloorRequest) => {
  while (stock.length < message.stock) stock.push(floor.build(built++))
  report()
})

let stopping: Promise<void> | null = null
const stop = () =>
  (stopping ??= (async () => {
    server.close()
    server.closeAllConnections()
    await floor.close()
    process.exit(0)
  })())
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
process.once('disconnect', stop)

server.listen(port, '127.0.0.1', report)
