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
}

const GAP = 2
/** A text column is cut no narrower than this (or its header). */
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
 * Lays a table out for a terminal `width` columns wide: columns are taken left to right while
 * they fit (text columns at their narrowest), the first always; the room left widens the text
 * columns again; what did not fit is listed in `hidden`. Without a width nothing is cut.
 */
export function layoutTable<Row>(all: ReadonlyArray<Column<Row>>, rows: readonly Row[], options: TableOptions = {}): TableLayout<Row> {
  const selected = selectColumns(all, options.columns)
  const values = selected.map((column) => rows.map((row) => terminalSafe(column.value(row))))
  const natural = selected.map((column, index) => Math.max(column.header.length, ...values[index]!.map((value) => value.length)))
  const narrowest = selected.map((column, index) =>
    kindOf(column) === 'text' ? Math.min(natural[index]!, Math.max(MIN_TEXT_WIDTH, column.header.length)) : natural[index]!,
  )

  const width = options.width ?? Number.POSITIVE_INFINITY
  const shown: number[] = []
  let used = 0
  selected.forEach((_, index) => {
    const need = narrowest[index]! + (shown.length > 0 ? GAP : 0)
    if (shown.length === 0 || used + need <= width) {
      shown.push(index)
      used += need
    }
  })
  const widths = shown.map((index) => narrowest[index]!)
  let room = width - used
  shown.forEach((index, position) => {
    const grow = Math.min(natural[index]! - widths[position]!, room)
    if (grow > 0) {
      widths[position]! += grow
      room -= grow
    }
  })
  return {
    columns: shown.map((index) => selected[index]!),
    widths,
    header: shown.map((index) => selected[index]!.header),
    cells: rows.map((_, row) => shown.map((index, position) => cut(values[index]![row]!, widths[position]!))),
    hidden: selected.filter((_, index) => !shown.includes(index)).map((column) => columnName(column)),
  }
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

function cut(value: string, width: number): string {
  return value.length <= width ? value : `${value.slice(0, Math.max(0, width - 1))}…`
}
