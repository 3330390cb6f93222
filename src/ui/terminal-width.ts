/**
 * The width of the terminal stdout is, in columns: 80 when it reports none. A pseudo-terminal
 * nobody sized (`script` without a terminal around it, some `docker exec -t` and CI runners)
 * reports 0, and a table laid out 0 wide prints one character a line.
 */
export function terminalColumns(stream: {columns?: number} = process.stdout): number {
  return stream.columns || 80
}
