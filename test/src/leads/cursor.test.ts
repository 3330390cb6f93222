import {createHmac, randomUUID} from 'node:crypto'

import {expect} from 'chai'

import {CursorCodec, type CursorPosition} from '../../../src/leads/cursor.js'
import {ValidationError} from '../../../src/shared/errors.js'

const codec = new CursorCodec(Buffer.alloc(32, 1))
const position: CursorPosition = {sortBy: 'updated_at', sortDir: 'asc', value: 1_790_000_000_123, id: randomUUID()}
const customer = randomUUID()

function decodeError(cursor: string, sortBy: CursorPosition['sortBy'] = 'updated_at', sortDir: CursorPosition['sortDir'] = 'asc'): ValidationError {
  try {
    codec.decode(cursor, sortBy, sortDir, customer)
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationError)
    return error as ValidationError
  }
  throw new Error('expected decode to throw')
}

describe('CursorCodec', function () {
  it('round-trips a position', function () {
    expect(codec.decode(codec.encode(position, customer), 'updated_at', 'asc', customer)).to.deep.equal(position)
  })

  it('round-trips a null last_interaction_at position', function () {
    const nullPosition: CursorPosition = {sortBy: 'last_interaction_at', sortDir: 'desc', value: null, id: randomUUID()}
    expect(codec.decode(codec.encode(nullPosition, customer), 'last_interaction_at', 'desc', customer)).to.deep.equal(nullPosition)
  })

  it('rejects a cursor replayed with another sort_by or sort_dir, naming the original sort', function () {
    const cursor = codec.encode(position, customer)
    expect(decodeError(cursor, 'created_at', 'asc').message).to.match(/issued for sort_by=updated_at&sort_dir=asc/)
    expect(decodeError(cursor, 'updated_at', 'desc').param).to.equal('cursor')
  })

  it('rejects a cursor whose payload was edited', function () {
    const [payload, signature] = codec.encode(position, customer).split('.') as [string, string]
    const edited = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
    edited['v'] = 0
    const forged = `${Buffer.from(JSON.stringify(edited)).toString('base64url')}.${signature}`
    expect(decodeError(forged).message).to.match(/cursor is not valid/)
  })

  it('rejects a cursor signed under another master key', function () {
    const foreign = new CursorCodec(Buffer.alloc(32, 2)).encode(position, customer)
    expect(decodeError(foreign).param).to.equal('cursor')
  })

  it('rejects a cursor or change position issued for another customer, and marks one that names none', function () {
    const other = randomUUID()
    expect(decodeError(codec.encode(position, other)).message).to.match(/not issued for this customer/)
    const change = {seq: 7, id: randomUUID(), updatedSince: null}
    expect(codec.decodeChange(codec.encodeChange(change, customer), customer)).to.deep.equal(change)
    expect(() => codec.decodeChange(codec.encodeChange(change, customer), other)).to.throw(ValidationError, /not issued for this customer/)
    const [payload] = codec.encode(position, customer).split('.') as [string]
    const {c: _dropped, ...old} = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
    const oldPayload = Buffer.from(JSON.stringify(old)).toString('base64url')
    const key = createHmac('sha256', Buffer.alloc(32, 1)).update('leads-list-cursor-v1').digest()
    const oldCursor = `${oldPayload}.${createHmac('sha256', key).update(oldPayload).digest().subarray(0, 16).toString('base64url')}`
    expect(codec.decode(oldCursor, 'updated_at', 'asc', other)).to.deep.equal({...position, unbound: true})
  })

  for (const garbage of ['x', '.', 'abc.def', 'a.b.c', '%%%.***', '']) {
    it(`rejects the garbage cursor ${JSON.stringify(garbage)}`, function () {
      expect(decodeError(garbage).param).to.equal('cursor')
    })
  }
})
