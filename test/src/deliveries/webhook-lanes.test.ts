import {expect} from 'chai'

import {WebhookLanes} from '../../../src/deliveries/webhook-lanes.js'

const item = (webhookId: string, n: number) => ({id: `${webhookId}-${n}`, webhookId})
const ids = (items: ReadonlyArray<{id: string}>) => items.map((each) => each.id)
const unlimited = () => Infinity

describe('WebhookLanes', function () {
  it('serves the webhooks in turn, one delivery each per turn, whatever the length of a lane', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    for (let n = 0; n < 1000; n++) lanes.add(item('a', n), 0, 0)
    lanes.add(item('b', 0), 0, 0)
    lanes.add(item('c', 0), 0, 0)
    expect(ids(lanes.pick(4, unlimited))).to.deep.equal(['a-0', 'b-0', 'c-0', 'a-1'])
    expect(lanes.size('a')).to.equal(998)
    expect(lanes.size('b')).to.equal(0)
  })

  it('starts the next pick with the webhooks served last', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    for (const webhook of ['a', 'b', 'c']) for (let n = 0; n < 3; n++) lanes.add(item(webhook, n), 0, 0)
    expect(ids(lanes.pick(2, unlimited))).to.deep.equal(['a-0', 'b-0'])
    expect(ids(lanes.pick(2, unlimited))).to.deep.equal(['c-0', 'a-1'])
  })

  it('gives a webhook no more than its allowance, and the others what is left', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    for (let n = 0; n < 5; n++) lanes.add(item('capped', n), 0, 0)
    for (let n = 0; n < 5; n++) lanes.add(item('open', n), 0, 0)
    const picked = lanes.pick(10, (webhookId) => (webhookId === 'capped' ? 2 : Infinity))
    expect(ids(picked).filter((id) => id.startsWith('capped'))).to.deep.equal(['capped-0', 'capped-1'])
    expect(ids(picked).filter((id) => id.startsWith('open'))).to.have.length(5)
    expect(lanes.size('capped')).to.equal(3)
  })

  it('keeps a scheduled delivery out of its lane until it is due', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    lanes.add(item('a', 0), 1_000, 0)
    lanes.add(item('a', 1), 500, 0)
    expect(lanes.pick(10, unlimited)).to.deep.equal([])
    expect(lanes.nextDueAt()).to.equal(500)
    expect(lanes.releaseDue(600)).to.equal(1)
    expect(ids(lanes.pick(10, unlimited))).to.deep.equal(['a-1'])
    expect(lanes.counts()).to.deep.equal({due: 0, scheduled: 1})
    expect(lanes.releaseDue(1_000)).to.equal(1)
    expect(ids(lanes.pick(10, unlimited))).to.deep.equal(['a-0'])
  })

  it('puts deliveries picked but not sent back at the head of their lane, in order', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    for (let n = 0; n < 4; n++) lanes.add(item('a', n), 0, 0)
    const picked = lanes.pick(2, unlimited)
    lanes.restore(picked)
    lanes.putBack(picked)
    expect(lanes.size('a')).to.equal(4)
    expect(ids(lanes.pick(4, unlimited))).to.deep.equal(['a-0', 'a-1', 'a-2', 'a-3'])
  })

  it('drops every delivery of a webhook, in its lane and scheduled, and nothing of another', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    lanes.add(item('gone', 0), 0, 0)
    lanes.add(item('gone', 1), 5_000, 0)
    lanes.add(item('kept', 0), 5_000, 0)
    expect(ids(lanes.drop('gone')).sort()).to.deep.equal(['gone-0', 'gone-1'])
    expect(lanes.size('gone')).to.equal(0)
    lanes.releaseDue(5_000)
    expect(ids(lanes.pick(10, unlimited))).to.deep.equal(['kept-0'])
  })

  it('removes one delivery wherever it waits', function () {
    const lanes = new WebhookLanes<ReturnType<typeof item>>()
    lanes.add(item('a', 0), 0, 0)
    lanes.add(item('a', 1), 5_000, 0)
    expect(lanes.remove('a-1', 'a')).to.equal(true)
    expect(lanes.remove('a-1', 'a')).to.equal(false)
    expect(lanes.size('a')).to.equal(1)
    lanes.releaseDue(5_000)
    expect(ids(lanes.drainAll())).to.deep.equal(['a-0'])
  })
})
