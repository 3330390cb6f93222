import {expect} from 'chai'

import {jsonBodyOf, rawField, typedField} from '../../../src/client/api-call.js'

describe('leads api fields', function () {
  it('builds the JSON body as gh api does: objects from key[sub], arrays from key[], rows from key[][sub]', function () {
    const body = jsonBodyOf(
      [
        'url=https://crm.example.com/hooks',
        'event_types[]=lead.created',
        'leads[][contact_name]=First',
        'leads[][custom_fields][budget]=1',
        'leads[][custom_fields][lead_line]=buyer',
        'leads[][contact_name]=Second',
        'custom_fields[budget]=12',
      ].map((raw) => (raw.includes('budget') ? typedField(raw) : rawField(raw))),
    )
    expect(body).to.deep.equal({
      url: 'https://crm.example.com/hooks',
      event_types: ['lead.created'],
      leads: [{contact_name: 'First', custom_fields: {budget: 1, lead_line: 'buyer'}}, {contact_name: 'Second'}],
      custom_fields: {budget: 12},
    })
  })

  it('refuses a field name gh api would not read', function () {
    for (const name of ['a[b', 'a]b', 'a[][]', '[a]'])
      expect(() => jsonBodyOf([[name, 'x']]), name).to.throw(`a field name is key, key[sub] or key[], got "${name}"`)
  })
})
