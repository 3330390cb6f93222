import {execFile} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
export const CLI = path.join(PROJECT_ROOT, 'bin/run.js')

/** An empty CLI config directory for every run that names none: no developer's profiles leak into a test. */
const NO_PROFILES = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-test-config-'))

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs the real `leads` executable in a child process with only the given LEADS_* variables. */
export function runCli(args: string[], env: Record<string, string>, cwd = PROJECT_ROOT): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LEADS_')))
  // npm test names the test CA relative to the project; a command run elsewhere would warn that it cannot load it.
  if (base['NODE_EXTRA_CA_CERTS']) base['NODE_EXTRA_CA_CERTS'] = path.resolve(PROJECT_ROOT, base['NODE_EXTRA_CA_CERTS'])
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], {env: {...base, LEADS_CONFIG_DIR: NO_PROFILES, ...env}, cwd}, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({code, stdout, stderr})
    })
  })
}

/**
 * Runs `leads` at a terminal: in a pseudo-terminal made by `script` (util-linux), `columns` wide,
 * typing `input`. What the terminal showed comes back as stdout (the pty merges both streams).
 */
export function runCliAtTerminal(args: string[], env: Record<string, string>, input = '', columns = 120): Promise<CliResult> {
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`
  const command = `stty cols ${columns} rows 40; ${[process.execPath, CLI, ...args].map(quote).join(' ')}`
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LEADS_')))
  if (base['NODE_EXTRA_CA_CERTS']) base['NODE_EXTRA_CA_CERTS'] = path.resolve(PROJECT_ROOT, base['NODE_EXTRA_CA_CERTS'])
  return new Promise((resolve) => {
    const child = execFile('script', ['-qec', command, '/dev/null'], {env: {...base, LEADS_CONFIG_DIR: NO_PROFILES, ...env, TERM: 'xterm-256color'}, cwd: PROJECT_ROOT}, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({code, stdout: stdout.replace(/\r\n/g, '\n'), stderr})
    })
    // Typed ahead: the terminal keeps it until the command reads.
    child.stdin?.end(input)
  })
}

/** Runs a `--json` command that must succeed and returns its parsed output. */
export async function runCliJson<T = any>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await runCli([...args, '--json'], env)
  if (result.code !== 0) throw new Error(`leads ${args.join(' ')} exited ${result.code}: ${result.stderr}`)
  return JSON.parse(result.stdout) as T
}
