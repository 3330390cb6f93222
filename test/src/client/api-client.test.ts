import {expect} from 'chai'
import nock from 'nock'

import {ApiRequestError, LeadsApiClient} from '../../../src/client/api-client.js'

const BASE = 'https://api.leads.test'
const CUSTOMER = '6f1c0000-0000-4000-8000-000000000001'
const TOKEN = 'svc_' + 'a'.repeat(64)

describe('LeadsApiClient', function () {
  let waits: number[]
  let client: LeadsApiClient

  beforeEach(function () {
    waits = []
    client = new LeadsApiClient({
      baseUrl: BASE,
      token: TOKEN,
      customerId: CUSTOMER,
      retries: 3,
      minRetryDelayMs: 1,
      sleep: async (ms) => {
        waits.push(ms)
      },
    })
  })
  afterEach(function () {
    nock.cleanAll()
  })

  it('sends the token, the customer header and the Idempotency-Key, and reads the RateLimit headers', async function () {
    const scope = nock(BASE, {reqheaders: {authorization: `Bearer ${TOKEN}`, 'x-customer-id': CUSTOMER, 'idempotency-key': 'k-1'}})
      .post('/api/agents/crm/leads/bulk', {leads: [{contact_name: 'x'}]})
      .reply(
        200,
        {dry_run: false, summary: {received: 1}, results: [], unknown_custom_fields: []},
        {'RateLimit-Limit': '10', 'RateLimit-Remaining': '9', 'RateLimit-Reset': '60'},
      )
    const result = await client.bulkCreate({leads: [{contact_name: 'x'}]}, 'k-1')
    expect(result.rateLimit).to.deep.equal({limit: 10, remaining: 9, resetSeconds: 60})
    expect(result.body.summary.received).to.equal(1)
    expect(scope.isDone()).to.equal(true)
  })

  it('waits Retry-After on 429 and then succeeds, without using up retries', async function () {
    const scope = nock(BASE)
      .get('/api/agents/crm/leads?limit=1')
      .times(5)
      .reply(429, {error: {type: 'rate_limit_error', code: 429, message: 'Rate limit exceeded. Retry later.'}}, {'Retry-After': '7'})
      .get('/api/agents/crm/leads?limit=1')
      .reply(200, {leads: [], total: 0, limit: 1, offset: 0, next_cursor: null})
    const result = await client.listLeads({limit: '1'})
    expect(result.body.total).to.equal(0)
    expect(waits).to.deep.equal([7000, 7000, 7000, 7000, 7000])
    expect(scope.isDone()).to.equal(true)
  })

  it('retries 5xx and network errors with backoff', async function () {
    nock(BASE).get('/api/agents/crm/leads?limit=1').reply(503, 'busy').get('/api/agents/crm/leads?limit=1').replyWithError({code: 'ECONNRESET'})
    nock(BASE).get('/api/agents/crm/leads?limit=1').reply(200, {leads: [], total: 0, limit: 1, offset: 0, next_cursor: null})
    const result = await client.listLeads({limit: '1'})
    expect(result.body.limit).to.equal(1)
  })

  it('gives up after its retries with the last error', async function () {
    nock(BASE)
      .get('/api/agents/crm/leads?limit=1')
      .times(4)
      .reply(500, {error: {type: 'api_error', code: 500, message: 'Internal server error.'}})
    try {
      await client.listLeads({limit: '1'})
    } catch (error) {
      expect((error as Error).message).to.equal('GET /api/agents/crm/leads answered 500: Internal server error.')
      return
    }
    throw new Error('expected a failure')
  })

  it('does not retry a 4xx and surfaces the envelope with a hint', async function () {
    const scope = nock(BASE)
      .get('/api/agents/crm/leads?limit=0')
      .reply(401, {error: {type: 'authentication_error', code: 401, message: 'Invalid, revoked or expired API token.'}})
    try {
      await client.listLeads({limit: '0'})
    } catch (error) {
      expect(error).to.be.instanceOf(ApiRequestError)
      expect(error).to.include({status: 401, type: 'authentication_error', message: 'Invalid, revoked or expired API token.'})
      expect((error as ApiRequestError).hint).to.match(/LEADS_API_TOKEN/)
      expect(scope.isDone()).to.equal(true)
      return
    }
    throw new Error('expected a failure')
  })

  it("retries a 409 with Retry-After (the key's first request still running) with the same key, until it is answered", async function () {
    const inProgress = {
      error: {type: 'invalid_request_error', code: 409, message: 'A request with this Idempotency-Key is still in progress. Retry after it completes.'},
    }
    const scope = nock(BASE, {reqheaders: {'idempotency-key': 'k-flight'}})
      .post('/api/agents/crm/leads/bulk')
      .times(2)
      .reply(409, inProgress, {'Retry-After': '1'})
      .post('/api/agents/crm/leads/bulk')
      .reply(200, {dry_run: false, summary: {received: 1}, results: [], unknown_custom_fields: []}, {'Idempotent-Replayed': 'true'})
    const result = await client.bulkCreate({leads: [{contact_name: 'x'}]}, 'k-flight')
    expect(result.body.summary.received).to.equal(1)
    expect(waits).to.have.length(2)
    expect(scope.isDone()).to.equal(true)
  })

  it('does not retry a 409 without Retry-After (the key used with another body)', async function () {
    const scope = nock(BASE)
      .post('/api/agents/crm/leads/bulk')
      .reply(409, {
        error: {
          type: 'invalid_request_error',
          code: 409,
          message: 'Idempotency-Key was already used with a different request body. Use a new key for a new request.',
        },
      })
    try {
      await client.bulkCreate({leads: [{contact_name: 'x'}]}, 'k-reused')
    } catch (error) {
      expect(error).to.be.instanceOf(ApiRequestError)
      expect(error).to.include({status: 409})
      expect(waits).to.deep.equal([])
      expect(scope.isDone()).to.equal(true)
      return
    }
    throw new Error('expected a failure')
  })
})
