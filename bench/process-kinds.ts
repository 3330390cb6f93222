import path from 'node:path'

/** One Node process's CPU time (user + system) and the script it ran with its first argument. */
export interface ProcessCpu {
  argv: string[]
  cpu_s: number
}

/** The CPU time of one kind of process, summed over the processes of that kind. */
export interface KindCpu {
  kind: string
  processes: number
  cpu_s: number
}

/**
 * A process's kind, from its script and first argument: a mocha worker, the `leads` command by
 * its topic (`leads daemon`, `leads keys`), npm (`npx` is npm too), a package's executable by its
 * name, else the script's path from `root` (or its file name, outside it).
 */
export function processKind(argv: readonly string[], root: string): string {
  const [script, first] = argv
  if (script === undefined) return 'node -e'
  if (script.endsWith('/mocha/lib/nodejs/worker.cjs')) return 'mocha worker'
  if (script.endsWith('/bin/run.js') || script.endsWith('/.bin/leads')) return first === undefined || first.startsWith('-') ? 'leads' : `leads ${first}`
  if (script.endsWith('/npm-cli.js')) return 'npm'
  const bin = /\/node_modules\/\.bin\/([^/]+)$/.exec(script)
  if (bin) return bin[1]!
  return script.startsWith(`${root}/`) ? path.relative(root, script) : path.basename(script)
}

/** The processes' CPU time by kind, the most first. */
export function cpuByKind(records: readonly ProcessCpu[], root: string): KindCpu[] {
  const kinds = new Map<string, KindCpu>()
  for (const record of records) {
    const kind = processKind(record.argv, root)
    const sum = kinds.get(kind) ?? {kind, processes: 0, cpu_s: 0}
    sum.processes += 1
    sum.cpu_s += record.cpu_s
    kinds.set(kind, sum)
  }
  return [...kinds.values()].sort((a, b) => b.cpu_s - a.cpu_s)
}
