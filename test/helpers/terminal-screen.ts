/** The sequences a terminal acts on, one match each: CSI (cursor moves, erasures, colours), OSC, charset and mode switches, or one character. */
const TOKENS = /\u001b\[([0-9;?]*)[ -/]*([@-~])|\u001b\][^\u0007]*\u0007|\u001b[()][A-Z0-9]|\u001b[=>78]|[^\u001b]/gu

/**
 * What a terminal shows once `output` has been written to it, as lines: carriage returns,
 * line feeds, cursor up/down/column and line erasures applied, as Ink's redraws and npm's spinner
 * use them; colours and other sequences dropped; trailing spaces and empty last lines left out.
 */
export function screenOf(output: string): string[] {
  const lines: string[][] = [[]]
  let row = 0
  let column = 0
  for (const match of output.matchAll(TOKENS)) {
    const [token, parameters, command] = match
    if (command !== undefined) {
      const n = Number(parameters?.split(';')[0] || (command === 'K' ? 0 : 1))
      if (command === 'A') row = Math.max(0, row - n)
      else if (command === 'B') row += n
      else if (command === 'G') column = n - 1
      else if (command === 'K')
        lines[row] = n === 2 ? [] : n === 1 ? [...Array<string>(column).fill(' '), ...(lines[row] ?? []).slice(column)] : (lines[row] ?? []).slice(0, column)
      while (lines.length <= row) lines.push([])
      continue
    }
    if (token === '\r') column = 0
    else if (token === '\n') {
      row += 1
      column = 0
      while (lines.length <= row) lines.push([])
    } else if (!token.startsWith('\u001b')) {
      const line = lines[row]!
      while (line.length < column) line.push(' ')
      line[column] = token
      column += 1
    }
  }
  const text = lines.map((line) => line.join('').trimEnd())
  while (text.length > 0 && text.at(-1) === '') text.pop()
  return text
}
