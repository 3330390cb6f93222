import {expect} from 'chai'

import {retryDelayMs} from '../../../src/deliveries/retry-delay.js'

describe('retryDelayMs', function () {
  it('doubles the base per failed attempt, times a factor between 1 and 2', function () {
    expect([1, 2, 3, 4].map((failed) => retryDelayMs(failed, 1000, 30_000, () => 0))).to.deep.equal([1000, 2000, 4000, 8000])
    expect([1, 2, 3].map((failed) => retryDelayMs(failed, 1000, 30_000, () => 0.5))).to.deep.equal([1500, 3000, 6000])
  })

  it('never waits more than the cap (the spec: 30 s), however many attempts failed', function () {
    expect(retryDelayMs(5, 1000, 30_000, () => 0.99)).to.equal(30_000)
    expect(retryDelayMs(10, 1000, 30_000, () => 0)).to.equal(30_000)
  })
})
