import {expect} from 'chai'

import {GroupCommitter, type Settled} from '../../../src/db/group-commit.js'
import {rejectsWith} from '../../helpers/fixtures.js'

/** A write function that records its groups and finishes each when the test says so. */
function recordingWriter(fail: (items: readonly number[]) => Error | null = () => null) {
  const groups: number[][] = []
  const finish: Array<() => void> = []
  let waiting: Array<{count: number; resolve: () => void}> = []
  /** Resolves once `count` groups have been handed to the writer. */
  const written = (count: number) =>
    new Promise<void>((resolve) => {
      if (groups.length >= count) resolve()
      else waiting.push({count, resolve})
    })
  const write = (items: readonly number[]) =>
    new Promise<Array<Settled<number>>>((resolve, reject) => {
      groups.push([...items])
      waiting = waiting.filter((waiter) => {
        if (groups.length < waiter.count) return true
        waiter.resolve()
        return false
      })
      finish.push(() => {
        const error = fail(items)
        if (error) reject(error)
        else resolve(items.map((item) => (item < 0 ? {error: new Error(`refused ${item}`)} : {value: item * 10})))
      })
    })
  return {groups, finish, write, written}
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('GroupCommitter', function () {
  it('writes an item at once while a slot is free, and the items that arrive meanwhile together', async function () {
    const writer = recordingWriter()
    const committer = new GroupCommitter(writer.write, {maxInFlight: 1, maxGroup: 64, slowMs: 60_000})
    const first = committer.submit(1)
    const rest = [2, 3, 4].map((item) => committer.submit(item))
    expect(writer.groups).to.deep.equal([[1]])
    writer.finish[0]!()
    expect(await first).to.equal(10)
    await tick()
    expect(writer.groups).to.deep.equal([[1], [2, 3, 4]])
    writer.finish[1]!()
    expect(await Promise.all(rest)).to.deep.equal([20, 30, 40])
  })

  it('starts the next group before it answers the items of the group that finished', async function () {
    const writer = recordingWriter()
    const committer = new GroupCommitter(writer.write, {maxInFlight: 1, maxGroup: 64, slowMs: 60_000})
    const order: string[] = []
    const first = committer.submit(1).then(() => order.push('first answered'))
    void committer.submit(2)
    writer.finish[0]!()
    // The next group is handed to the database while the first group's answers wait their turn.
    await new Promise((resolve) => setImmediate(resolve))
    order.push(writer.groups.length === 2 ? 'next group started' : 'next group not started')
    await first
    expect(order).to.deep.equal(['next group started', 'first answered'])
  })

  it('answers the items of a group at once when no group waits for the slot', async function () {
    const writer = recordingWriter()
    const committer = new GroupCommitter(writer.write, {maxInFlight: 1, maxGroup: 64, slowMs: 60_000})
    const order: string[] = []
    const alone = committer.submit(1).then(() => order.push('answered'))
    writer.finish[0]!()
    // A turn of the event loop queued as the write ends: the answer does not wait for it.
    setImmediate(() => order.push('next turn'))
    await alone
    await tick()
    expect(order).to.deep.equal(['answered', 'next turn'])
  })

  it('settles each item on its own: one refused item fails alone', async function () {
    const writer = recordingWriter()
    const committer = new GroupCommitter(writer.write, {maxInFlight: 1, maxGroup: 64, slowMs: 60_000})
    const blocker = committer.submit(0)
    const good = committer.submit(5)
    const refused = committer.submit(-1)
    writer.finish[0]!()
    await blocker
    await tick()
    writer.finish[1]!()
    expect(await good).to.equal(50)
    expect((await rejectsWith(refused, Error)).message).to.equal('refused -1')
  })

  it('writes a failed group again item by item, so only the item that fails gets the error', async function () {
    const writer = recordingWriter((items) => (items.includes(7) ? new Error('duplicate key 7') : null))
    const committer = new GroupCommitter(
      async (items: readonly number[]) => {
        const pending = writer.write(items)
        writer.finish.at(-1)!()
        return pending
      },
      {maxInFlight: 1, maxGroup: 64, slowMs: 60_000},
    )
    const outcomes = await Promise.allSettled([1, 2, 7, 3].map((item) => committer.submit(item)))
    expect(writer.groups).to.deep.equal([[1], [2, 7, 3], [2], [7], [3]])
    expect(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : (outcome.reason as Error).message))).to.deep.equal([
      10,
      20,
      'duplicate key 7',
      30,
    ])
  })

  it('caps a group at maxGroup items', async function () {
    const writer = recordingWriter()
    const committer = new GroupCommitter(writer.write, {maxInFlight: 1, maxGroup: 2, slowMs: 60_000})
    const all = [1, 2, 3, 4, 5].map((item) => committer.submit(item))
    for (let group = 0; group < 3; group++) {
      writer.finish[group]!()
      await tick()
    }
    expect(writer.groups).to.deep.equal([[1], [2, 3], [4, 5]])
    expect(await Promise.all(all)).to.deep.equal([10, 20, 30, 40, 50])
  })

  it('starts the next group once the group in flight releases its slot, and settles the first when it ends', async function () {
    const groups: number[][] = []
    const finish: Array<() => void> = []
    const releases: Array<() => void> = []
    const committer = new GroupCommitter(
      (items: readonly number[], release: () => void) =>
        new Promise<Array<Settled<number>>>((resolve) => {
          groups.push([...items])
          releases.push(release)
          finish.push(() => resolve(items.map((item) => ({value: item * 10}))))
        }),
      {maxInFlight: 1, maxGroup: 64, slowMs: 60_000},
    )
    const first = committer.submit(1)
    const second = committer.submit(2)
    const third = committer.submit(3)
    expect(groups).to.deep.equal([[1]])
    releases[0]!()
    // Released twice (its write's own call, then its end) still frees one slot only.
    releases[0]!()
    expect(groups).to.deep.equal([[1], [2, 3]])
    const settled: number[] = []
    void first.then((value) => settled.push(value))
    await tick()
    expect(settled).to.deep.equal([])
    finish[0]!()
    expect(await first).to.equal(10)
    expect(groups).to.have.length(2)
    finish[1]!()
    expect(await Promise.all([second, third])).to.deep.equal([20, 30])
  })

  it('lets a new group start when the one in flight is slow, so a lock wait does not hold up every write', async function () {
    const writer = recordingWriter()
    const committer = new GroupCommitter(writer.write, {maxInFlight: 1, maxGroup: 64, slowMs: 20})
    const stuck = committer.submit(1)
    const next = committer.submit(2)
    expect(writer.groups).to.deep.equal([[1]])
    // The first group never ends here: only its slow timer can let the second one start.
    await writer.written(2)
    expect(writer.groups).to.deep.equal([[1], [2]])
    writer.finish[1]!()
    expect(await next).to.equal(20)
    writer.finish[0]!()
    expect(await stuck).to.equal(10)
  })
})
