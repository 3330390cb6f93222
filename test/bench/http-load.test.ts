import http from 'node:http'
import type {AddressInfo} from 'node:net'

import {expect} from 'chai'

import {LoadConnection} from '../../bench/http-load.js'

/**
 * The benches' load client. The soak once reported 75 requests "unanswered within 30 s": they had
 * been written to keep-alive connections the daemon had closed after 65 s idle, which neither
 * fails nor answers. A request on a closed connection must be refused at once.
 */
describe('bench load client', function () {
  let server: http.Server
  let url: string

  before(async function () {
    server = http.createServer((_request, response) => {
      response.setHeader('content-length', '2')
      response.end('ok')
    })
    server.keepAliveTimeout = 50
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(function () {
    server.close()
  })

  it('refuses at once a request on a connection the server closed while idle', async function () {
    const connection = await LoadConnection.open(url)
    expect(await connection.get('/', {})).to.deep.equal({status: 200, text: 'ok'})
    // What its keep-alive timeout does, without waiting for it.
    server.closeIdleConnections()
    for (let waited = 0; waited < 100 && !connection.closed; waited++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(connection.closed, 'the server closed the idle connection').to.equal(true)

    const outcome = await Promise.race([
      connection.get('/', {}).then(
        () => 'answered',
        (error: Error) => `refused: ${error.message}`,
      ),
      new Promise((resolve) => setTimeout(() => resolve('left waiting'), 1000)),
    ])
    expect(outcome).to.equal('refused: the connection closed')
  })
})
