import {expect} from 'chai'
import fc from 'fast-check'

import {leadWords, parseSearch, prefixRange, searchWords, WORD_MAX_LENGTH} from '../../../src/leads/lead-search-terms.js'

describe('search words and terms', function () {
  it('reads an ASCII text as the Unicode rules do: runs of letters and digits, lower-cased, each once, at most a column long', function () {
    const asUnicodeRules = (text: string) => [
      ...new Set(
        text
          .toLowerCase()
          .split(/[^\p{L}\p{N}]+/u)
          .filter((word) => word !== '')
          .map((word) => word.slice(0, WORD_MAX_LENGTH)),
      ),
    ]
    fc.assert(
      fc.property(fc.string({unit: fc.integer({min: 0, max: 0x7f}).map((code) => String.fromCharCode(code)), maxLength: 300}), (text) => {
        expect(searchWords(text)).to.deep.equal(asUnicodeRules(text))
      }),
      {numRuns: 2000},
    )
    expect(searchWords(`Ada ${'x'.repeat(250)}\u0010B`)).to.deep.equal(['ada', 'x'.repeat(WORD_MAX_LENGTH), 'b'])
  })

  it('splits text into lower-cased words without accents, each once', function () {
    expect(searchWords("Grace-Marie O'Brien grace")).to.deep.equal(['grace', 'marie', 'o', 'brien'])
    expect(searchWords('José NÚÑEZ Ærø ﬁn')).to.deep.equal(['jose', 'nunez', 'aero', 'fin'])
    expect(searchWords('Łukasz Weiß Øyvind Đặng Żółć Þórsdóttir Œuvre ẞ')).to.deep.equal([
      'lukasz',
      'weiss',
      'oyvind',
      'dang',
      'zolc',
      'thorsdottir',
      'oeuvre',
      'ss',
    ])
    // Σ lower-cases to ς at the end of a text and σ within it; both are one letter to search.
    expect(searchWords('ΟΔΥΣ Οδυσσέας ΠΑΠΑΔΟΠΟΥΛΟΣ')).to.deep.equal(['οδυσ', 'οδυσσεασ', 'παπαδοπουλοσ'])
    // Invisible within a word (soft hyphen, joiners, word joiner, U+FEFF); a zero-width space separates.
    expect(searchWords('Maxi\u00admilian Schwarz\u2060kopf Ra\u200c\u200dj\ufeffa Ann\u200bBerg')).to.deep.equal([
      'maximilian',
      'schwarzkopf',
      'raja',
      'ann',
      'berg',
    ])
    expect(searchWords('  -- ')).to.deep.equal([])
    expect(searchWords(null)).to.deep.equal([])
    expect(searchWords('x'.repeat(WORD_MAX_LENGTH + 50))).to.deep.equal(['x'.repeat(WORD_MAX_LENGTH)])
  })

  it('splits plain ASCII text as it splits any other text', function () {
    // An accented letter sends the text down the Unicode path; alone after a space it is the word `e`.
    fc.assert(
      fc.property(fc.string({unit: 'binary-ascii', maxLength: 60}), (text) => {
        const unicode = searchWords(`${text} \u00e9`)
        const notE = (words: string[]) => words.filter((word) => word !== 'e')
        expect(unicode).to.include('e')
        expect(notE(unicode)).to.deep.equal(notE(searchWords(text)))
      }),
      {seed: 20261128, numRuns: 500},
    )
  })

  it('gives a lead the words of its name and of its email before the @', function () {
    expect(leadWords({contactName: 'Grace Hopper', contactEmail: 'g.hopper2@navy.example'})).to.deep.equal(['grace', 'hopper', 'g', 'hopper2'])
    expect(leadWords({contactName: null, contactEmail: null})).to.deep.equal([])
  })

  it('reads a term as phone digits, or as word pieces and addresses, dropping pieces another piece begins with', function () {
    expect(parseSearch('+1 (555) 010-2000')).to.deep.equal({kind: 'phone', digits: '15550102000', last10: '5550102000'})
    expect(parseSearch('ann\ufeffberg')).to.deep.equal({kind: 'words', pieces: ['annberg'], addresses: []})
    expect(parseSearch('gr grace hop')).to.deep.equal({kind: 'words', pieces: ['grace', 'hop'], addresses: []})
    expect(parseSearch('Grace.Hopper@Navy grace')).to.deep.equal({kind: 'words', pieces: ['grace'], addresses: ['grace.hopper@navy']})
    expect(parseSearch('-- ()')).to.equal(null)
    expect(parseSearch('%_')).to.equal(null)
  })

  it('bounds a prefix by raising its last character, astral ones included', function () {
    expect(prefixRange('gra')).to.deep.equal(['gra', 'grb'])
    expect(prefixRange('z')).to.deep.equal(['z', '{'])
    expect(prefixRange('a😀')).to.deep.equal(['a😀', 'a😁'])
    expect(prefixRange('\ud7ff')).to.deep.equal(['\ud7ff', '\ue000'])
  })

  it('carries past U+10FFFF, which cannot be raised, and leaves a prefix of it only unbounded', function () {
    const top = String.fromCodePoint(0x10ffff)
    expect(prefixRange(`a@${top}`)).to.deep.equal([`a@${top}`, 'aA'])
    expect(prefixRange(`a${top}${top}`)).to.deep.equal([`a${top}${top}`, 'b'])
    expect(prefixRange(`\ud7ff${top}`)).to.deep.equal([`\ud7ff${top}`, '\ue000'])
    expect(prefixRange(top + top)).to.deep.equal([top + top, null])
  })
})
