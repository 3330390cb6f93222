import {expect} from 'chai'

import {customerSetup, parseLeadInput} from '../../../src/leads/lead-input.js'
import {MatchPool, normalizeEmail, phoneDigits, phoneLast10} from '../../../src/leads/lead-matching.js'
import {newLead} from '../../../src/leads/lead-merge.js'
import type {LeadRecord} from '../../../src/leads/lead-types.js'

const SETUP = customerSetup([{id: 'stage', customerId: 'customer', slug: 'new', name: 'New', color: '#888888', position: 0}], [])

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

  it('reads the decimal digits of every script as the ASCII digits they are', function () {
    expect(phoneDigits('＋１ （５５５） ０１０-２０００')).to.equal('15550102000')
    expect(phoneDigits('٥٥٥٠١٠٢٠٠٠')).to.equal('5550102000')
    expect(phoneDigits('+1 ५५५ ०१० २०००')).to.equal('15550102000')
    // The mathematical digits are five runs of 0 to 9 one after another.
    expect(phoneDigits('𝟎𝟗 𝟘𝟡 𝟢𝟫 𝟬𝟵 𝟶𝟿')).to.equal('0909090909')
    // Numbers that are not decimal digits (superscripts, Roman numerals) are formatting.
    expect(phoneDigits('²Ⅻ')).to.equal(null)
    const everyDigit = Array.from({length: 0x110000}, (_, codePoint) => codePoint)
      .filter((codePoint) => codePoint < 0xd800 || codePoint > 0xdfff)
      .map((codePoint) => String.fromCodePoint(codePoint))
      .filter((character) => /^\p{Nd}$/u.test(character))
    expect(everyDigit.length).to.be.above(600)
    expect(everyDigit.map((digit) => phoneDigits(digit)).join('')).to.equal('0123456789'.repeat(everyDigit.length / 10))
  })
})

describe('MatchPool', function () {
  let made = 0
  /** A lead record with the given contact; the rest as newLead would leave it. */
  const lead = (contactEmail: string | null, contactPhone: string | null): LeadRecord => {
    const input = parseLeadInput(
      {contact_name: `Lead ${++made}`, ...(contactEmail ? {contact_email: contactEmail} : {}), ...(contactPhone ? {contact_phone: contactPhone} : {})},
      SETUP,
    )
    return newLead('customer', input, {stageId: 'stage', sourceType: 'manual'}, 1_000 + made)
  }
  const entry = (record: LeadRecord) => ({lead: record, email: normalizeEmail(record.contactEmail), phone: phoneLast10(record.contactPhone)})

  it('finds the oldest lead with the email, else the oldest with the phone’s last 10 digits', function () {
    const older = lead(null, '+1 555 010 2000')
    const byEmail = lead('Ada@Example.org', null)
    const younger = lead('ada@example.org', '555-010-2000')
    const pool = new MatchPool([entry(older), entry(byEmail), entry(younger)])
    expect(pool.find({contactEmail: ' ADA@example.org', contactPhone: '5550102000'})).to.deep.equal({lead: byEmail, by: 'email', position: 1})
    expect(pool.find({contactEmail: 'grace@example.org', contactPhone: '(555) 010-2000'})).to.deep.equal({lead: older, by: 'phone', position: 0})
    expect(pool.find({contactEmail: 'grace@example.org', contactPhone: '555 010 9999'})).to.equal(null)
    expect(pool.find({})).to.equal(null)
  })

  it('finds the leads added as the youngest, and a merged lead by its new keys only', function () {
    const pool = new MatchPool([])
    const first = lead('first@example.org', '555 010 1111')
    pool.add(first)
    const second = lead('second@example.org', '555 010 1111')
    pool.add(second)
    expect(pool.find({contactPhone: '5550101111'})!.lead).to.equal(first)
    // The first merges a new email and phone: it keeps its age, loses its old keys.
    const merged = {...first, contactEmail: 'renamed@example.org', contactPhone: '555 010 3333'}
    pool.replace(0, merged)
    expect(pool.find({contactEmail: 'first@example.org'})).to.equal(null)
    expect(pool.find({contactPhone: '5550101111'})).to.deep.equal({lead: second, by: 'phone', position: 1})
    expect(pool.find({contactEmail: 'renamed@example.org'})).to.deep.equal({lead: merged, by: 'email', position: 0})
    // The older lead comes first again once it has the key back.
    pool.replace(0, {...merged, contactPhone: '555 010 1111'})
    expect(pool.find({contactPhone: '5550101111'})!.position).to.equal(0)
    expect(pool.leads().map((record) => record.id)).to.deep.equal([first.id, second.id])
  })
})
