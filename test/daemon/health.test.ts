import {expect} from 'chai'

import {forEachBackend} from '../helpers/backends.js'
import {startTestDaemon, type TestDaemon} from '../helpers/test-daemon.js'

describe('health endpoints', function () {
  forEachBackend((backend) => {
    let daemon: TestDaemon

    before(async function () {
      daemon = await startTestDaemon(backend)
    })
    after(async function () {
      await daemon.stop()
    })

    it('answers /healthz without credentials', async function () {
      const response = await daemon.request('/healthz')
      expect(response.status).to.equal(200)
      expect(response.body).to.deep.equal({status: 'ok'})
    })

    it('answers /readyz with the state of the database and Redis', async function () {
      const response = await daemon.request('/readyz')
      expect(response.status).to.equal(200)
      expect(response.body).to.deep.equal({
        status: 'ready',
        checks: {database: true, redis: backend.env['LEADS_REDIS_URL'] ? true : null, dispatch: backend.env['LEADS_REDIS_URL'] ? true : null},
        reasons: [],
      })
    })
  })
})
