import {expect} from 'chai'

import {parseSince} from '../../../src/shared/duration.js'
import {ValidationError} from '../../../src/shared/errors.js'

describe('parseSince', function () {
  const now = Date.UTC(2026, 10, 25, 12)

  it('reads a duration as that long before now', function () {
    expect(parseSince('2h', 'since', now)).to.equal(now - 2 * 3_600_000)
    expect(parseSince(' 1d ', 'since', now)).to.equal(now - 86_400_000)
    expect(parseSince('90s', 'since', now)).to.equal(now - 90_000)
  })

  it('reads an ISO-8601 date, or a date-time with its offset', function () {
    expect(parseSince('2026-11-24T09:00:00Z', 'since', now)).to.equal(Date.UTC(2026, 10, 24, 9))
    expect(parseSince('2026-11-24T09:00:00.250+02:00', 'since', now)).to.equal(Date.UTC(2026, 10, 24, 7, 0, 0, 250))
    expect(parseSince('2026-11-24T09:00Z', 'since', now)).to.equal(Date.UTC(2026, 10, 24, 9))
    expect(parseSince('2026-11-24', 'since', now)).to.equal(Date.UTC(2026, 10, 24))
  })

  it('refuses a time in the future, which would show nothing until then', function () {
    expect(() => parseSince('2099-01-01', 'since', now)).to.throw(
      ValidationError,
      'since must not be in the future (it is 2099-01-01T00:00:00.000Z, the time here is 2026-11-25T12:00:00.000Z)',
    )
    expect(parseSince('2026-11-25T12:00:00Z', 'since', now)).to.equal(now)
  })

  for (const text of ['yesterday', '2026-11-24T09:00:00', 'Nov 24 2026', '2026-13-01', '2h ago', '-2h', '', '2026']) {
    it(`refuses "${text}" naming the flag`, function () {
      expect(() => parseSince(text, 'since', now)).to.throw(
        ValidationError,
        /^since must be an ISO-8601 time like 2026-11-24T09:00:00Z, or a duration ago like 2h or 1d/,
      )
    })
  }
})
