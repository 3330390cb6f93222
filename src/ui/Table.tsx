import {Box, Text} from 'ink'

import {type Column, columnWidths} from './table-layout.js'

export interface TableProps<Row> {
  columns: ReadonlyArray<Column<Row>>
  rows: readonly Row[]
  /** Shown instead of an empty table. */
  emptyText: string
}

/** An aligned table with a bold header and per-cell colours. */
export function Table<Row>({columns, rows, emptyText}: TableProps<Row>) {
  if (rows.length === 0) return <Text dimColor>{emptyText}</Text>
  const widths = columnWidths(columns, rows)
  return (
    <Box flexDirection="column">
      <Box gap={2}>
        {columns.map((column, index) => (
          <Box key={column.header} width={widths[index]}>
            <Text bold>{column.header}</Text>
          </Box>
        ))}
      </Box>
      {rows.map((row, rowIndex) => (
        <Box key={rowIndex} gap={2}>
          {columns.map((column, index) => (
            <Box key={column.header} width={widths[index]}>
              <Text color={column.color?.(row)}>{column.value(row)}</Text>
            </Box>
          ))}
        </Box>
      ))}
    </Box>
  )
}
