import {expect} from 'chai'

import {LIVE_MS, multiWriter, OVERLAP_MS, type WriterStretch} from '../../../src/db/writer-nodes.js'

const NOW = 1_000_000
const stretch = (daemon: string, node: string, since: number, seenAt: number): WriterStretch => ({
  daemon,
  role: 'api',
  nodeId: `uuid-${node}`,
  nodeName: node,
  since: NOW + since,
  seenAt: NOW + seenAt,
})

describe('multiWriter: daemons writing through several Galera nodes at once', function () {
  it('finds none while every daemon writes through one node', function () {
    expect(multiWriter([stretch('a', 'node1', -60_000, 0), stretch('b', 'node1', -30_000, -1000), stretch('w', 'node1', -60_000, -500)], NOW)).to.equal(null)
  })

  it('finds two daemons whose stretches on two nodes overlap, and names the nodes and the daemons', function () {
    const found = multiWriter([stretch('a', 'node1', -60_000, 0), stretch('b', 'node2', -OVERLAP_MS - 1000, -200), stretch('c', 'node1', -60_000, -1000)], NOW)
    expect(found?.nodes).to.deep.equal(['node1', 'node2'])
    expect(found?.writers.map((writer) => writer.daemon)).to.deep.equal(['a', 'c', 'b'])
  })

  it('finds none after a failover: the old node’s stretches end before the new node’s begin', function () {
    // a and w moved to node2 at -8 s; b has not written since just before the failover.
    const stretches = [stretch('a', 'node2', -8000, 0), stretch('w', 'node2', -7000, -1000), stretch('b', 'node1', -120_000, -9000)]
    expect(multiWriter(stretches, NOW)).to.equal(null)
  })

  it('finds none for a handover that overlaps by less than OVERLAP_MS (two balancers moving a second apart)', function () {
    const stretches = [stretch('a', 'node1', -30_000, -4000 + OVERLAP_MS - 1000), stretch('b', 'node2', -4000, 0)]
    expect(multiWriter(stretches, NOW)).to.equal(null)
  })

  it('counts no daemon whose latest record is older than LIVE_MS', function () {
    const stretches = [stretch('gone', 'node2', -60_000, -LIVE_MS - 1), stretch('a', 'node1', -60_000, 0)]
    expect(multiWriter(stretches, NOW)).to.equal(null)
  })
})
