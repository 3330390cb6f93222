import {expect} from 'chai'

import {cpuByKind, processKind} from '../../bench/process-kinds.js'

describe('benchmarks: the test suite CPU by kind of process', function () {
  const root = '/work/project'

  it('names a process by what it ran', function () {
    expect(processKind([`${root}/node_modules/mocha/lib/nodejs/worker.cjs`], root)).to.equal('mocha worker')
    expect(processKind([`${root}/bin/run.js`, 'daemon'], root)).to.equal('leads daemon')
    expect(processKind(['/root/.npm/_npx/52f0/node_modules/.bin/leads', 'keys'], root)).to.equal('leads keys')
    expect(processKind([`${root}/bin/run.js`, '--version'], root)).to.equal('leads')
    expect(processKind(['/usr/lib/node_modules/npm/bin/npm-cli.js', 'exec'], root)).to.equal('npm')
    expect(processKind([`${root}/tools/openapi-client/node_modules/.bin/openapi-typescript`, 'x.json'], root)).to.equal('openapi-typescript')
    expect(processKind([`${root}/scripts/reference.js`], root)).to.equal('scripts/reference.js')
    expect(processKind(['/dev/shm/leads-client-1/out/client.js'], root)).to.equal('client.js')
    expect(processKind([], root)).to.equal('node -e')
  })

  it('sums the CPU time and counts the processes of each kind, the most first', function () {
    const records = [
      {argv: [`${root}/bin/run.js`, 'keys'], cpu_s: 0.5},
      {argv: [`${root}/node_modules/mocha/lib/nodejs/worker.cjs`], cpu_s: 20},
      {argv: [`${root}/bin/run.js`, 'keys'], cpu_s: 0.75},
    ]
    expect(cpuByKind(records, root)).to.deep.equal([
      {kind: 'mocha worker', processes: 1, cpu_s: 20},
      {kind: 'leads keys', processes: 2, cpu_s: 1.25},
    ])
  })
})
