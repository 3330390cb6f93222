export interface Column<Row> {
  header: string
  value: (row: Row) => string
  /** Optional Ink colour for the cell, e.g. state colours. */
  color?: (row: Row) => string | undefined
}

/** Column widths that fit the header and every cell. */
export function columnWidths<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[]): number[] {
  return columns.map((column) => Math.max(column.header.length, ...rows.map((row) => column.value(row).length)))
}

/** An aligned plain-text table, for output that is not a terminal. */
export function formatTable<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[]): string {
  const widths = columnWidths(columns, rows)
  const line = (cells: string[]) =>
    cells
      .map((cell, index) => cell.padEnd(widths[index] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(columns.map((column) => column.header)), ...rows.map((row) => line(columns.map((column) => column.value(row))))].join('\n')
}
