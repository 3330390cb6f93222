import {Box, Text} from 'ink'

import {type Column, layoutTable} from './table-layout.js'

interface TableProps<Row> {
  columns: ReadonlyArray<Column<Row>>
  rows: readonly Row[]
  /** Shown instead of an empty table. */
  emptyText: string
  /** The terminal's width to fit (see layoutTable); none: every value whole. */
  width?: number
  /** The columns --columns asked for, in order. */
  columnNames?: readonly string[]
}

/**
 * An aligned table with a bold header and per-cell colours, one line per row: ids and times are
 * never cut or wrapped, free text is cut with an ellipsis; below the table, what shortened
 * columns left out and the columns that did not fit.
 */
export function Table<Row>({columns, rows, emptyText, width, columnNames}: TableProps<Row>) {
  if (rows.length === 0) return <Text dimColor>{emptyText}</Text>
  const layout = layoutTable(columns, rows, {width, columns: columnNames})
  const last = layout.columns.length - 1
  const cell = (text: string, index: number) => (index > 0 ? '  ' : '') + (index === last ? text : text.padEnd(layout.widths[index]!))
  return (
    <Box flexDirection="column">
      <Text bold>{layout.header.map(cell).join('')}</Text>
      {layout.cells.map((cells, rowIndex) => (
        <Text key={rowIndex}>
          {cells.map((text, index) => (
            <Text key={index} color={layout.columns[index]!.color?.(rows[rowIndex]!)}>
              {cell(text, index)}
            </Text>
          ))}
        </Text>
      ))}
      {layout.notes.map((note) => (
        <Text key={note} dimColor>
          {fitted(note, width)}
        </Text>
      ))}
      {/* Wrapped, not cut: it names what is missing and how to see it. */}
      {layout.hidden.length > 0
        ? wrapped(`Not shown: ${layout.hidden.join(', ')} (try --columns, --no-truncate or --json)`, width).map((line) => (
            <Text key={line} dimColor>
              {line}
            </Text>
          ))
        : null}
    </Box>
  )
}

/** The text in lines of at most `width` characters, broken at spaces (a word longer than the width is cut). */
function wrapped(text: string, width: number | undefined): string[] {
  if (width === undefined || text.length <= width) return [text]
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = ''
    }
    line = line === '' ? fitted(word, width) : `${line} ${word}`
  }
  return [...lines, line]
}

function fitted(text: string, width: number | undefined): string {
  return width === undefined || text.length <= width ? text : `${text.slice(0, width - 1)}…`
}
