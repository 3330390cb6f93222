import {AppError} from '../shared/errors.js'

/**
 * Asks for a secret at the terminal without showing it: the keys typed are not echoed; Enter
 * ends the answer, Backspace deletes, Ctrl-C cancels (nothing changed).
 */
export function askHidden(question: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = ''
    const finish = (error?: Error) => {
      input.off('data', onData)
      input.setRawMode(false)
      input.pause()
      output.write('\n')
      if (error) reject(error)
      else resolve(answer)
    }
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') return finish()
        if (char === '\u0003' || char === '\u0004') return finish(new AppError('invalid_request_error', 400, 'cancelled; nothing was changed'))
        if (char === '\u007f' || char === '\b') answer = answer.slice(0, -1)
        else if (char >= ' ') answer += char
      }
    }
    // Echo off before the question shows: a token typed the moment the prompt appears is never echoed.
    input.setRawMode(true)
    output.write(question)
    input.setEncoding('utf8')
    input.on('data', onData)
    input.resume()
  })
}

/** Everything on stdin up to its end: a value piped in (`printenv TOKEN | leads config set token -`). */
export async function readAllStdin(input: NodeJS.ReadStream = process.stdin): Promise<string> {
  let text = ''
  input.setEncoding('utf8')
  for await (const chunk of input) text += chunk as string
  return text
}
