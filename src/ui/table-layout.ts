import {ValidationError} from '../shared/errors.js'
import {terminalSafe} from './terminal-text.js'

/**
 * How a column behaves when the terminal is narrow: `id` and `time` values are never cut, so they
 * can be copied whole into the next command, nor are `short` ones (states, counts); `text` is cut
 * with an ellipsis to fit.
 */
type ColumnKind = 'id' | 'time' | 'short' | 'text'

export interface Column<Row> {
  header: string
  value: (row: Row) => string
  /** Optional Ink colour for the cell, e.g. state colours. */
  color?: (row: Row) => string | undefined
  /** Default `text`. */
  kind?: ColumnKind
  /** Lower comes first when the terminal is too narrow for every column (default: after every ranked column, in order). */
  rank?: number
  /** A text column is cut no narrower than this (default 8, or its header). */
  minWidth?: number
  /** Where a cut text loses characters: `end` (default) or `middle`, which keeps how a value ends (URLs). */
  cutAt?: 'end' | 'middle'
  /**
   * Shortens the column's values for a terminal, together: e.g. leaves out what every value
   * begins with, saying so in `note`. Never applied to a pipe or with --no-truncate.
   */
  shorten?: (values: readonly string[]) => {values: string[]; note: string} | null
}

/** What to show: the terminal width to fit (none: every value whole) and the columns asked for by --columns. */
interface TableOptions {
  width?: number
  columns?: readonly string[]
}

/** A table laid out for a terminal: the columns shown, their widths, the cells (safe, cut to fit), and the columns left out. */
interface TableLayout<Row> {
  columns: Array<Column<Row>>
  widths: number[]
  header: string[]
  cells: string[][]
  hidden: string[]
  /** What the shortened columns left out, one line each. */
  notes: string[]
}

const GAP = 2
/** A text column is cut no narrower than this (or its header), unless it says otherwise. */
const MIN_TEXT_WIDTH = 8

/** A column's name for --columns: its header in lower case with dashes, e.g. `last-used`. */
function columnName<Row>(column: Column<Row>): string {
  return column.header.toLowerCase().replace(/\s+/g, '-')
}

/** The columns named by --columns, in that order; ValidationError naming the valid ones for an unknown name. */
function selectColumns<Row>(columns: ReadonlyArray<Column<Row>>, names: readonly string[] | undefined): Array<Column<Row>> {
  if (names === undefined || names.length === 0) return [...columns]
  return names.map((name) => {
    const column = columns.find((candidate) => columnName(candidate) === name.trim().toLowerCase())
    if (!column) throw new ValidationError(`unknown column "${name}"; columns: ${columns.map(columnName).join(', ')}`, 'columns')
    return column
  })
}

/**
 * Lays a table out for a terminal `width` columns wide: columns are taken by rank (ids and
 * states before free text; with --columns, in the order asked) while they fit, text columns at
 * their narrowest, the first always; the room left widens the text columns again, in the same
 * order; the columns keep their places, and what did not fit is listed in `hidden`. Without a
 * width nothing is cut or shortened.
 */
export function layoutTable<Row>(all: ReadonlyArray<Column<Row>>, rows: readonly Row[], options: TableOptions = {}): TableLayout<Row> {
  const selected = selectColumns(all, options.columns)
  const notes: string[] = []
  const values = selected.map((column) => {
    const whole = rows.map((row) => column.value(row))
    const shortened = options.width === undefined || rows.length === 0 ? null : (column.shorten?.(whole) ?? null)
    if (shortened) notes.push(shortened.note)
    return (shortened?.values ?? whole).map((value) => terminalSafe(value))
  })
  const natural = selected.map((column, index) => Math.max(column.header.length, ...values[index]!.map((value) => value.length)))
  const narrowest = selected.map((column, index) =>
    kindOf(column) === 'text' ? Math.min(natural[index]!, Math.max(column.minWidth ?? MIN_TEXT_WIDTH, column.header.length)) : natural[index]!,
  )

  const width = options.width ?? Number.POSITIVE_INFINITY
  const asked = options.columns !== undefined && options.columns.length > 0
  const order = selected.map((_, index) => index)
  if (!asked) order.sort((a, b) => rankOf(selected[a]!) - rankOf(selected[b]!) || a - b)
  const taken: number[] = []
  let used = 0
  for (const index of order) {
    const need = narrowest[index]! + (taken.length > 0 ? GAP : 0)
    if (taken.length === 0 || used + need <= width) {
      taken.push(index)
      used += need
    }
  }
  const widths = new Map(taken.map((index) => [index, narrowest[index]!]))
  let room = width - used
  for (const index of taken) {
    const grow = Math.min(natural[index]! - widths.get(index)!, room)
    if (grow > 0) {
      widths.set(index, widths.get(index)! + grow)
      room -= grow
    }
  }
  const shown = [...taken].sort((a, b) => a - b)
  return {
    columns: shown.map((index) => selected[index]!),
    widths: shown.map((index) => widths.get(index)!),
    header: shown.map((index) => selected[index]!.header),
    cells: rows.map((_, row) => shown.map((index) => cut(values[index]![row]!, widths.get(index)!, selected[index]!.cutAt ?? 'end'))),
    hidden: selected.filter((_, index) => !taken.includes(index)).map((column) => columnName(column)),
    notes,
  }
}

/**
 * The longest start every value shares, ending just after `boundary` (e.g. `public_api:` of
 * scopes), or '' when none would leave every value something to show.
 */
export function commonStart(values: readonly string[], boundary: string): string {
  if (values.length === 0) return ''
  let start = values[0]!
  for (const value of values) {
    while (!value.startsWith(start)) start = start.slice(0, -1)
  }
  // Back to a boundary, and further back while some value would be left with nothing.
  let end = start.lastIndexOf(boundary)
  while (end >= 0 && values.some((value) => value.length <= end + boundary.length)) end = start.lastIndexOf(boundary, end - 1)
  return end < 0 ? '' : start.slice(0, end + boundary.length)
}

/** The layout as aligned lines of text, header first. */
function tableLines<Row>(layout: TableLayout<Row>): string[] {
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, index) => cell.padEnd(layout.widths[index] ?? 0))
      .join(' '.repeat(GAP))
      .trimEnd()
  return [line(layout.header), ...layout.cells.map(line)]
}

/** An aligned plain-text table with every value whole. */
export function formatTable<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[]): string {
  return tableLines(layoutTable(columns, rows)).join('\n')
}

/**
 * Rows for a pipe (stdout not a terminal), as gh prints them: no header, values separated by
 * tabs, never cut; tabs and line breaks inside values become spaces, other controls are shown.
 */
export function formatTsv<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[], names?: readonly string[]): string {
  const selected = selectColumns(columns, names)
  return rows.map((row) => selected.map((column) => terminalSafe(column.value(row).replace(/[\t\r\n]+/g, ' '))).join('\t')).join('\n')
}

function kindOf<Row>(column: Column<Row>): ColumnKind {
  return column.kind ?? 'text'
}

function rankOf<Row>(column: Column<Row>): number {
  return column.rank ?? Number.MAX_SAFE_INTEGER
}

function cut(value: string, width: number, at: 'end' | 'middle'): string {
  if (value.length <= width) return value
  if (at === 'end' || width < 5) return `${value.slice(0, Math.max(0, width - 1))}…`
  const head = Math.ceil((width - 1) / 2)
  return `${value.slice(0, head)}…${value.slice(value.length - (width - 1 - head))}`
}
