import {expect} from 'chai'
import {render} from 'ink-testing-library'

import {keyColumns, type KeyOutput} from '../../../commands/_shared/key-output.js'
import {ValidationError} from '../../../src/shared/errors.js'
import {Table} from '../../../src/ui/Table.js'
import {commonStart, formatTsv, layoutTable} from '../../../src/ui/table-layout.js'

const KEY_COLUMNS = keyColumns({oneCustomer: false})
const stripAnsi = (text: string) => text.replace(/\u001B\[[0-9;]*m/g, '')

const keys: KeyOutput[] = [
  {
    id: '0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f',
    name: 'nightly sync for the Acme Realty CRM mirror, owned by the data team',
    customer_id: '8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21',
    scopes: ['public_api:leads:read', 'public_api:leads:write'],
    internal: false,
    state: 'active',
    created_at: '2026-11-23T18:45:53.120Z',
    last_used_at: null,
    expires_at: '2027-02-21T18:45:53.120Z',
    previous_token_retires_at: null,
  },
  {
    id: 'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b',
    name: null,
    customer_id: '8d0f6c1e-5a57-4f0c-9b8e-2f3f1c9a4b21',
    scopes: ['public_api:webhooks:manage'],
    internal: true,
    state: 'revoked',
    created_at: '2026-11-20T09:00:00.000Z',
    last_used_at: '2026-11-22T10:11:12.000Z',
    expires_at: null,
    previous_token_retires_at: null,
  },
]

/** The table as a terminal `width` columns wide shows it. */
function frameAt(width: number): string[] {
  const {lastFrame} = render(<Table columns={KEY_COLUMNS} rows={keys} emptyText="No keys." width={width} />)
  return stripAnsi(lastFrame() ?? '').split('\n')
}

describe('tables', function () {
  for (const width of [80, 160]) {
    it(`fits a ${width}-column terminal with every key id and time whole on its line`, function () {
      const lines = frameAt(width)
      for (const line of lines) expect(line.length, line).to.be.at.most(width)
      for (const key of keys) {
        const line = lines.find((candidate) => candidate.includes(key.id))
        expect(line, `the line of ${key.id}`).to.not.equal(undefined)
        // Copied out of the line, the id is the whole id.
        expect(line!.split(/\s+/)[0]).to.equal(key.id)
      }
    })
  }

  it('cuts free text with an ellipsis and names the columns left out at 120 columns', function () {
    const lines = frameAt(120)
    expect(lines[0]).to.match(/^ID\s+STATE\s+SCOPES\s+NAME\s+CUSTOMER/)
    expect(lines.join('\n')).to.include('nightly sync')
    expect(lines.join('\n')).to.not.include('owned by the data team')
    expect(lines.some((line) => line.includes('…'))).to.equal(true)
    expect(lines.join(' ')).to.match(/Not shown: internal, old-token-until, expires, last-used, created \(try --columns/)
  })

  it('takes columns by rank at 80 columns, keeping their places, and says what a shortened column left out', function () {
    const layout = layoutTable(KEY_COLUMNS, keys, {width: 80})
    expect(layout.header).to.deep.equal(['ID', 'STATE', 'SCOPES', 'NAME'])
    expect(layout.cells.map((cells) => cells[2])).to.deep.equal(['leads:read+write', 'webhooks:manage'])
    expect(layout.notes).to.deep.equal(['SCOPES: public_api: left out (common to all); a+b: both actions on one resource'])
    expect(layoutTable(KEY_COLUMNS, keys).notes, 'with no width, nothing is shortened').to.deep.equal([])
  })

  it('finds the start every value shares up to a boundary, leaving each value something', function () {
    expect(commonStart(['public_api:leads', 'public_api:webhooks'], ':')).to.equal('public_api:')
    expect(commonStart(['public_api:leads', 'public_api:leads'], ':')).to.equal('public_api:')
    expect(commonStart(['a/b/c', 'a/b/'], '/')).to.equal('a/')
    expect(commonStart(['x:1', 'y:1'], ':')).to.equal('')
    expect(commonStart([], ':')).to.equal('')
  })

  it('shows every column whole at 160 columns when they fit, and every value with no width at all', function () {
    const wide = layoutTable(KEY_COLUMNS, keys, {width: 400})
    expect(wide.hidden).to.deep.equal([])
    const whole = layoutTable(KEY_COLUMNS, keys)
    expect(whole.cells[0]).to.include(keys[0]!.name)
    expect(whole.hidden).to.deep.equal([])
  })

  it('shows the columns --columns names, in that order, and refuses an unknown one naming the valid ones', function () {
    const layout = layoutTable(KEY_COLUMNS, keys, {width: 80, columns: ['state', 'id', 'last-used']})
    expect(layout.header).to.deep.equal(['STATE', 'ID', 'LAST USED'])
    expect(() => layoutTable(KEY_COLUMNS, keys, {columns: ['colour']})).to.throw(
      ValidationError,
      /unknown column "colour"; columns: id, state, scopes, name, customer, internal, old-token-until, expires, last-used, created/,
    )
  })

  it('writes tab-separated rows without a header for a pipe, every value whole', function () {
    const lines = formatTsv(KEY_COLUMNS, keys).split('\n')
    expect(lines).to.have.length(2)
    expect(lines[0]!.split('\t')).to.deep.equal([
      keys[0]!.id,
      'active',
      'public_api:leads:read,public_api:leads:write',
      keys[0]!.name,
      keys[0]!.customer_id,
      'no',
      '-',
      '2027-02-21T18:45:53.120Z',
      'never',
      '2026-11-23T18:45:53.120Z',
    ])
    expect(formatTsv(KEY_COLUMNS, keys, ['id', 'state'])).to.equal(`${keys[0]!.id}\tactive\n${keys[1]!.id}\trevoked`)
  })

  it('renders escape sequences in a cell inert, in the view and in the pipe', function () {
    const hostile = [{...keys[0]!, name: 'evil\u001b]0;pwned\u0007\u001b]52;c;Y3VybCBldmls\u0007\u009b31mred\u202etxt.exe'}]
    const {lastFrame} = render(<Table columns={KEY_COLUMNS} rows={hostile} emptyText="" width={400} />)
    const frame = lastFrame() ?? ''
    for (const output of [frame, formatTsv(KEY_COLUMNS, hostile)]) {
      expect(output).to.not.match(/\u001b\]|\u0007|\u009b|\u202e/)
      expect(output).to.include('evil^[]0;pwned^G^[]52;c;Y3VybCBldmls^GM-^[31mred<U+202E>txt.exe')
    }
  })
})
