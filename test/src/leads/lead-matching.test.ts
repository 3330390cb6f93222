import {expect} from 'chai'

import {normalizeEmail, phoneDigits, phoneLast10} from '../../../src/leads/lead-matching.js'

describe('match keys', function () {
  it('normalises emails by trimming and lower-casing', function () {
    expect(normalizeEmail('  Ada@Example.ORG ')).to.equal('ada@example.org')
    expect(normalizeEmail('   ')).to.equal(null)
    expect(normalizeEmail(null)).to.equal(null)
  })

  it('keeps only the digits of a phone, and the last 10 for matching', function () {
    expect(phoneDigits('+1 (555) 010-2000')).to.equal('15550102000')
    expect(phoneLast10('+1 (555) 010-2000')).to.equal('5550102000')
    expect(phoneLast10('555.010.2000')).to.equal('5550102000')
    expect(phoneLast10('010-2000')).to.equal('0102000')
    expect(phoneDigits('ext. only')).to.equal(null)
    expect(phoneLast10(null)).to.equal(null)
  })
})
