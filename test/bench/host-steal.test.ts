import {expect} from 'chai'

import {cpuTimes, stealReport} from '../../bench/host-steal.js'

describe('benchmarks: CPU time taken by the host', function () {
  it('reads the machine counters, which only grow', function () {
    const first = cpuTimes()!
    const second = cpuTimes()!
    expect(first.total).to.be.above(0)
    expect(second.total).to.be.at.least(first.total)
    expect(second.steal).to.be.at.least(first.steal)
  })

  it('gives the stolen share of the time between two readings, and says when it is too high', function () {
    expect(stealReport({steal: 100, total: 10_000}, {steal: 110, total: 11_000})).to.equal('CPU time taken by the host (steal) during the run: 1.0%')
    expect(stealReport({steal: 100, total: 10_000}, {steal: 350, total: 11_000})).to.equal(
      'CPU time taken by the host (steal) during the run: 25.0% (above 2%: not a quiet-machine figure)',
    )
    expect(stealReport(null, {steal: 1, total: 2})).to.match(/not measured/)
  })
})
