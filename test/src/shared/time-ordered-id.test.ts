import {expect} from 'chai'
import {validate, version} from 'uuid'

import {TimeOrderedIds} from '../../../src/shared/time-ordered-id.js'

describe('TimeOrderedIds', function () {
  it('gives valid, unique UUIDv7s that sort in the order they were made, also many in one millisecond', function () {
    const generator = new TimeOrderedIds()
    const ids = Array.from({length: 5000}, () => generator.next(1_795_000_000_000))
    expect(ids.every((id) => validate(id) && version(id) === 7)).to.equal(true)
    expect(new Set(ids).size).to.equal(ids.length)
    expect([...ids].sort()).to.deep.equal(ids)
    const later = generator.next(1_795_000_000_001)
    expect(later > ids.at(-1)!).to.equal(true)
    expect(later.slice(0, 13)).to.equal('01a1ee56-5e01')
  })
})
