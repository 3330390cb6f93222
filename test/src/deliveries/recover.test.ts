import {expect} from 'chai'

import {recoverSince} from '../../../src/deliveries/recover.js'

describe('the since of a recover request', function () {
  it('is the time given, to the millisecond', function () {
    expect(recoverSince({since: '2026-11-24T09:00:00.250Z'})).to.equal(Date.parse('2026-11-24T09:00:00.250Z'))
    expect(recoverSince({since: '2026-11-24T10:00:00+01:00'})).to.equal(Date.parse('2026-11-24T09:00:00Z'))
  })

  it('moves digits past the millisecond to the next millisecond, so "since" never takes in the millisecond before it', function () {
    expect(recoverSince({since: '2026-11-24T09:00:00.0001Z'})).to.equal(Date.parse('2026-11-24T09:00:00.001Z'))
    expect(recoverSince({since: '2026-11-24T09:00:00.250000Z'})).to.equal(Date.parse('2026-11-24T09:00:00.250Z'))
  })
})
