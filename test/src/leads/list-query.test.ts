import {expect} from 'chai'

import {parseListQuery} from '../../../src/leads/list-query.js'
import {ValidationError} from '../../../src/shared/errors.js'

function rejected(query: Record<string, string | string[]>): ValidationError {
  try {
    parseListQuery(query)
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationError)
    return error as ValidationError
  }
  throw new Error(`expected ${JSON.stringify(query)} to be rejected`)
}

describe('parseListQuery', function () {
  it('applies the spec defaults', function () {
    expect(parseListQuery({})).to.deep.equal({
      status: undefined,
      stageId: undefined,
      search: undefined,
      createdSince: undefined,
      updatedSince: undefined,
      sortBy: 'updated_at',
      sortDir: 'asc',
      leadLine: undefined,
      includeCustomFields: false,
      cursor: undefined,
      limit: 20,
      offset: 0,
      sync: false,
    })
  })

  it('converts every parameter', function () {
    const query = parseListQuery({
      status: 'won',
      stageId: 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
      search: '  Ada ',
      created_since: '2026-01-01T00:00:00Z',
      updated_since: '2026-02-01T10:00:00+02:00',
      sort_by: 'last_interaction_at',
      sort_dir: 'desc',
      lead_line: 'seller',
      include_custom_fields: 'true',
      limit: '100',
      offset: '40',
    })
    expect(query).to.include({status: 'won', stageId: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', search: 'Ada'})
    expect(query.createdSince).to.equal(Date.UTC(2026, 0, 1))
    expect(query.updatedSince).to.equal(Date.UTC(2026, 1, 1, 8))
    expect(query).to.include({sortBy: 'last_interaction_at', sortDir: 'desc', leadLine: 'seller', includeCustomFields: true, limit: 100, offset: 40})
  })

  for (const [param, value] of [
    ['status', 'open'],
    ['stageId', 'not-a-uuid'],
    ['search', ''],
    ['search', 'x'.repeat(201)],
    ['created_since', 'yesterday'],
    ['created_since', '2026-01-01'],
    ['updated_since', '2026-13-01T00:00:00Z'],
    ['sort_by', 'name'],
    ['sort_dir', 'up'],
    ['lead_line', 'renter'],
    ['include_custom_fields', 'yes'],
    ['limit', '0'],
    ['limit', '101'],
    ['limit', '2.5'],
    ['limit', 'ten'],
    ['offset', '-1'],
    ['offset', '1e3'],
    ['cursor', 'x'.repeat(1025)],
  ] as const) {
    it(`rejects ${param}=${JSON.stringify(value.length > 20 ? value.slice(0, 20) + '…' : value)} naming the parameter`, function () {
      const error = rejected({[param]: value})
      expect(error.param).to.equal(param)
      expect(error.message).to.include(`"${param}"`)
    })
  }

  it('says which date-time form it takes, a shortened ISO-8601 one being refused', function () {
    for (const value of ['2026-11-28T15:46Z', '20261128T154609Z']) {
      expect(rejected({created_since: value}).message).to.equal(
        'query parameter "created_since" must be an RFC 3339 date-time (date, time to the second, zone), like 2026-01-31T00:00:00Z or 2026-01-31T00:00:00.000+02:00',
      )
    }
  })

  it('rejects an unknown parameter by name', function () {
    const error = rejected({sortBy: 'created_at'})
    expect(error.param).to.equal('sortBy')
    expect(error.message).to.equal('unknown query parameter "sortBy"')
  })

  it('rejects a parameter given twice', function () {
    expect(rejected({limit: ['1', '2']}).param).to.equal('limit')
  })

  it('rejects cursor and offset together', function () {
    expect(rejected({cursor: 'abc.def', offset: '5'}).param).to.equal('offset')
  })
})
