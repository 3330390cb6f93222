import {PassThrough} from 'node:stream'

import {expect} from 'chai'

import {askHidden} from '../../../src/ui/hidden-prompt.js'

/** A terminal's stdin and stderr as the prompt sees them, recording what happens in order. */
function terminal() {
  const events: string[] = []
  const input = Object.assign(new PassThrough(), {
    isRaw: false,
    setRawMode(raw: boolean) {
      events.push(raw ? 'echo off' : 'echo on')
      input.isRaw = raw
      return input
    },
  })
  const output = Object.assign(new PassThrough(), {
    write(chunk: string) {
      events.push(`shown ${JSON.stringify(chunk)}`)
      return true
    },
  })
  return {events, input: input as unknown as NodeJS.ReadStream, output: output as unknown as NodeJS.WriteStream, type: (text: string) => input.write(text)}
}

describe('askHidden', function () {
  it('turns echo off before the question shows, so a token typed the moment the prompt appears is never echoed', async function () {
    const tty = terminal()
    const answer = askHidden('API token (not shown): ', tty.input, tty.output)
    tty.type('svc_secret\b\bet\r')
    expect(await answer).to.equal('svc_secret')
    expect(tty.events).to.deep.equal(['echo off', 'shown "API token (not shown): "', 'echo on', 'shown "\\n"'])
  })

  it('cancels on Ctrl-C with nothing changed, and gives the terminal its echo back', async function () {
    const tty = terminal()
    const answer = askHidden('API token (not shown): ', tty.input, tty.output)
    tty.type('svc_\u0003')
    const error = await answer.then(
      () => null,
      (caught: Error) => caught,
    )
    expect(error?.message).to.equal('cancelled; nothing was changed')
    expect(tty.events.at(-2)).to.equal('echo on')
  })
})
