import {type Hook, toConfiguredId} from '@oclif/core'

/**
 * What `leads` says to a word it does not know, a usage error (exit 2) at a terminal or not:
 * words after a real command are its unexpected arguments (the command's own parser says so);
 * anything else is named, with the closest command when one is near.
 */
const hook: Hook.CommandNotFound = async function (options) {
  const words = options.id.split(':')
  for (let length = words.length - 1; length > 0; length--) {
    const id = words.slice(0, length).join(':')
    const command = options.config.findCommand(id)
    if (!command) continue
    const extra = words.slice(length)
    if (Object.keys(command.args ?? {}).length > 0) return options.config.runCommand(id, [...extra, ...(options.argv ?? [])])
    const named = toConfiguredId(id, options.config)
    return usageError.call(
      this,
      `Unexpected argument${extra.length > 1 ? 's' : ''}: ${extra.join(' ')}`,
      `${named} takes none; see ${options.config.bin} ${named} --help`,
      options.argv,
    )
  }
  const visible = [
    ...options.config.commands.filter((command) => !command.hidden).map((command) => command.id),
    ...options.config.topics.filter((topic) => !topic.hidden).map((topic) => topic.name),
  ]
  const typed = toConfiguredId(options.id, options.config)
  const closest = nearest(options.id, visible)
  const suggestion = closest === null ? '' : ` Did you mean ${toConfiguredId(closest, options.config)}?`
  const topic = options.config.findTopic(words[0]!) ? ` ${words[0]}` : ''
  return usageError.call(
    this,
    `${typed} is not a ${options.config.bin} command.${suggestion}`,
    `${options.config.bin} help${topic} lists the commands`,
    options.argv,
  )
}

/** A usage error (exit 2): with --json the API's error envelope on stderr, as every command prints one; else oclif's error line. */
function usageError(this: Hook.Context, message: string, hint: string, argv: string[] | undefined): void {
  if (argv?.includes('--json')) {
    process.stderr.write(`${JSON.stringify({error: {type: 'invalid_request_error', code: 400, message, hint}, exit_code: 2})}\n`)
    return this.exit(2)
  }
  return this.error(`${message} (${hint})`, {exit: 2})
}

/** The command id (or flag name) nearest `typed` by edit distance, when near enough to be a typo of it. */
export function nearest(typed: string, ids: readonly string[]): string | null {
  let best: {id: string; distance: number} | null = null
  for (const id of ids) {
    const distance = editDistance(typed, id)
    if (best === null || distance < best.distance) best = {id, distance}
  }
  return best !== null && best.distance <= Math.max(2, Math.floor(typed.length / 3)) ? best.id : null
}

/** Levenshtein distance (insertions, deletions and substitutions each count one). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({length: b.length + 1}, (_, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}

export default hook
