import {expect} from 'chai'

import {MemoryQueue} from '../../../src/deliveries/dispatch-queue.js'

describe('the in-process dispatch queue', function () {
  it('wakes every caller waiting on it, not only the last to start waiting', async function () {
    const queue = new MemoryQueue()
    const BLOCK_MS = 10_000
    const startedAt = Date.now()
    const takes = [queue.take(10, BLOCK_MS), queue.take(10, BLOCK_MS)]
    await queue.enqueue(['a'])
    await queue.enqueue(['b'])
    const taken = await Promise.all(takes)
    expect(Date.now() - startedAt, 'both reads ended long before their wait ran out').to.be.below(BLOCK_MS / 2)
    const left = await queue.take(10, 0)
    expect([...taken.flat(), ...left].sort()).to.deep.equal(['a', 'b'])
  })

  it('ends a waiting read when closed', async function () {
    const queue = new MemoryQueue()
    const take = queue.take(10, 10_000)
    await queue.close()
    expect(await take).to.deep.equal([])
  })
})
