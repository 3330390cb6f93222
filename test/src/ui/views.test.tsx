import {expect} from 'chai'
import {render} from 'ink-testing-library'

import {SecretOnce} from '../../../src/ui/SecretOnce.js'
import {Table} from '../../../src/ui/Table.js'
import {formatTable} from '../../../src/ui/table-layout.js'

// eslint-disable-next-line no-control-regex
const stripAnsi = (text: string) => text.replace(/\u001B\[[0-9;]*m/g, '')

interface Row {
  id: string
  state: string
}

const columns = [
  {header: 'ID', value: (row: Row) => row.id},
  {header: 'STATE', value: (row: Row) => row.state, color: (row: Row) => (row.state === 'active' ? 'green' : 'red')},
]

describe('views', function () {
  it('formats an aligned plain-text table', function () {
    expect(formatTable(columns, [{id: 'a1', state: 'active'}, {id: 'b22222', state: 'revoked'}])).to.equal(
      'ID      STATE\na1      active\nb22222  revoked',
    )
  })

  it('renders the Ink table with the same alignment', function () {
    const {lastFrame} = render(<Table columns={columns} rows={[{id: 'a1', state: 'active'}, {id: 'b22222', state: 'revoked'}]} emptyText="none" />)
    expect(stripAnsi(lastFrame() ?? '').split('\n').map((line) => line.trimEnd())).to.deep.equal(['ID      STATE', 'a1      active', 'b22222  revoked'])
  })

  it('renders the empty text for no rows', function () {
    const {lastFrame} = render(<Table columns={columns} rows={[]} emptyText="No keys." />)
    expect(stripAnsi(lastFrame() ?? '')).to.equal('No keys.')
  })

  it('shows a secret once in a box with the warning', function () {
    const {lastFrame} = render(<SecretOnce title="API token" secret="svc_abc" details={[['key id', 'k1']]} />)
    const frame = stripAnsi(lastFrame() ?? '')
    expect(frame).to.include('API token')
    expect(frame).to.include('svc_abc')
    expect(frame).to.include('cannot be shown again')
    expect(frame).to.match(/key id\s+k1/)
    expect(frame).to.include('╭')
  })
})
