import {expect} from 'chai'

import {checkSetting} from '../../../src/client/client-settings.js'
import {defaultStateFile} from '../../../src/client/pull-state.js'

describe('the base URL setting', function () {
  it('is kept in one spelling: scheme and host in lower case, no default port, no trailing slash', function () {
    for (const spelling of ['http://127.0.0.1:8080', 'HTTP://127.0.0.1:8080/', ' http://127.0.0.1:8080// ']) {
      expect(checkSetting('base-url', spelling), spelling).to.equal('http://127.0.0.1:8080')
    }
    expect(checkSetting('base-url', 'https://Leads.Example:443/api/')).to.equal('https://leads.example/api')
    expect(checkSetting('base-url', 'http://leads.example:80')).to.equal('http://leads.example')
  })

  it('so two spellings of one API share a pull state file', function () {
    const customer = '6f1c1e0a-7d9a-4a51-9a77-0c0f6e3b1a10'
    const file = (spelling: string) => defaultStateFile('/data', checkSetting('base-url', spelling), customer)
    expect(file('HTTP://LEADS.example:80/')).to.equal(file('http://leads.example'))
  })
})
