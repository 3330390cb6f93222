import {execFile, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {run} from '@oclif/core'
import {Exit, handle} from '@oclif/core/handle'

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
export const CLI = path.join(PROJECT_ROOT, 'bin/run.js')

/** An empty CLI config directory for every run that names none: no developer's profiles leak into a test. */
const NO_PROFILES = fs.mkdtempSync(path.join(os.tmpdir(), 'leads-test-config-'))

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** The environment a run sees: the test process's, without its LEADS_* variables, plus `env`. */
function commandEnv(env: Record<string, string>): Record<string, string> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('LEADS_'))) as Record<string, string>
  // npm test names the test CA relative to the project; a command run elsewhere would warn that it cannot load it.
  if (base['NODE_EXTRA_CA_CERTS']) base['NODE_EXTRA_CA_CERTS'] = path.resolve(PROJECT_ROOT, base['NODE_EXTRA_CA_CERTS'])
  return {...base, LEADS_CONFIG_DIR: NO_PROFILES, ...env}
}

/** Runs the real `leads` executable in a child process: for what needs a process of its own (start-up, the working directory, signals, stdin). */
export function runCliProcess(args: string[], env: Record<string, string>, cwd = PROJECT_ROOT, input?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], {env: commandEnv(env), cwd}, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      resolve({code, stdout, stderr})
    })
    // Piped in, as `… | leads …` would; without input, stdin stays open and empty as before.
    if (input !== undefined) child.stdin?.end(input)
  })
}

/**
 * Runs a `leads` command in this process, as heroku/cli's tests do with oclif's runCommand: the
 * same command classes, flags, hooks and error handling as the executable, with stdout and stderr
 * captured, the environment and working directory set for the run, and no terminal. About a
 * tenth of a child process's cost.
 */
export function runCli(args: string[], env: Record<string, string>, cwd = PROJECT_ROOT): Promise<CliResult> {
  return runInProcess(args, env, cwd)
}

/**
 * Runs a `leads` command in this process (as runCli) with stdout and stderr a terminal `columns`
 * wide and no keyboard (stdin is not one): for what a view shows at a width, without a process
 * of its own loading Ink for every run. What needs a real terminal (prompts, colour detection,
 * the screen's rows) runs in one: runCliAtTerminal.
 */
export function runCliAtWidth(args: string[], env: Record<string, string>, columns: number): Promise<CliResult> {
  return runInProcess(args, env, PROJECT_ROOT, columns)
}

async function runInProcess(args: string[], env: Record<string, string>, cwd: string, columns?: number): Promise<CliResult> {
  const saved = {env: {...process.env}, cwd: process.cwd(), exitCode: process.exitCode, out: process.stdout.write, err: process.stderr.write}
  const ttys = [process.stdout, process.stderr, process.stdin].map((stream) => [stream, Object.getOwnPropertyDescriptor(stream, 'isTTY')] as const)
  const widths = [process.stdout, process.stderr].map((stream) => [stream, Object.getOwnPropertyDescriptor(stream, 'columns')] as const)
  let stdout = ''
  let stderr = ''
  const capture = (append: (text: string) => void) =>
    function write(chunk: string | Uint8Array, encodingOrDone?: unknown, done?: unknown): boolean {
      append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))
      const callback = typeof encodingOrDone === 'function' ? encodingOrDone : done
      if (typeof callback === 'function') queueMicrotask(() => (callback as () => void)())
      return true
    }
  for (const name of Object.keys(process.env)) delete process.env[name]
  Object.assign(process.env, commandEnv(env))
  process.chdir(cwd)
  process.exitCode = undefined
  for (const [stream] of ttys) {
    const terminal = columns !== undefined && stream !== process.stdin
    Object.defineProperty(stream, 'isTTY', {value: terminal, configurable: true, writable: true})
    if (terminal) Object.defineProperty(stream, 'columns', {value: columns, configurable: true, writable: true})
  }
  process.stdout.write = capture((text) => (stdout += text)) as typeof process.stdout.write
  process.stderr.write = capture((text) => (stderr += text)) as typeof process.stderr.write
  let code = 0
  try {
    await run(args, {root: PROJECT_ROOT})
    code = Number(process.exitCode ?? 0)
  } catch (error) {
    // The executable's own handler prints an error that escapes a command (usage errors, exit 2), then exits: here it only reports the code.
    const exit = Exit.exit
    Exit.exit = ((exitCode = 0) => {
      code = exitCode
    }) as typeof Exit.exit
    try {
      await handle(error as Error)
    } finally {
      Exit.exit = exit
    }
  } finally {
    process.stdout.write = saved.out
    process.stderr.write = saved.err
    for (const [stream, descriptor] of ttys) {
      if (descriptor) Object.defineProperty(stream, 'isTTY', descriptor)
      else delete (stream as {isTTY?: boolean}).isTTY
    }
    for (const [stream, descriptor] of widths) {
      if (descriptor) Object.defineProperty(stream, 'columns', descriptor)
      else delete (stream as {columns?: number}).columns
    }
    for (const name of Object.keys(process.env)) delete process.env[name]
    Object.assign(process.env, saved.env)
    process.chdir(saved.cwd)
    process.exitCode = saved.exitCode
  }
  return {code, stdout, stderr}
}

/**
 * Runs `leads` at a terminal: in a pseudo-terminal made by `script` (util-linux), `columns` wide,
 * typing `input`. What the terminal showed comes back as stdout (the pty merges both streams).
 */
export function runCliAtTerminal(args: string[], env: Record<string, string>, input = '', columns = 120): Promise<CliResult> {
  const run = startCliAtTerminal(args, env, columns)
  // Typed ahead: the terminal keeps it until the command reads.
  run.type(input, {last: true})
  return run.exited
}

/** A `leads` command running at a terminal until it ends: what it has shown so far, and typing into it. */
export interface TerminalRun {
  /** What the terminal has shown so far (line breaks as \n). */
  shown(): string
  /** Types `text` (Ctrl-C is '\u0003', which the terminal turns into SIGINT); `last` closes the keyboard. */
  type(text: string, options?: {last?: boolean}): void
  exited: Promise<CliResult>
}

/** A word for a POSIX shell, single-quoted. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`
}

/** Starts `leads` at a terminal (as runCliAtTerminal does) and hands it over while it runs. */
export function startCliAtTerminal(args: string[], env: Record<string, string>, columns = 120): TerminalRun {
  // exec: the command's own exit status, not that of script's shell ($SHELL, often dash, which
  // dies of a Ctrl-C its child handled).
  const command = `stty cols ${columns} rows 40; exec ${[process.execPath, CLI, ...args].map(shellQuote).join(' ')}`
  const child = spawn('script', ['-qec', command, '/dev/null'], {env: {...commandEnv(env), TERM: 'xterm-256color'}, cwd: PROJECT_ROOT})
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  // Typing into a terminal that has just closed (the command ended first) is an EPIPE on its
  // keyboard, not a failure of the test: what the command did is in `exited`.
  child.stdin.on('error', () => undefined)
  const shown = () => stdout.replace(/\r\n/g, '\n')
  return {
    shown,
    type: (text, options = {}) => (options.last ? child.stdin.end(text) : child.stdin.write(text)),
    exited: new Promise((resolve) => child.on('close', (code) => resolve({code: code ?? 1, stdout: shown(), stderr}))),
  }
}

/**
 * Runs a shell command line (as a README shows it) at a terminal `columns` wide in `cwd`: bash
 * runs it, exec'd so its status is the command's. What the terminal showed comes back as stdout.
 */
export function runShellAtTerminal(commandLine: string, env: Record<string, string>, cwd: string, columns = 80): Promise<CliResult> {
  const child = spawn('script', ['-qec', `stty cols ${columns} rows 40; exec bash -c ${shellQuote(commandLine)}`, '/dev/null'], {
    env: {...commandEnv(env), TERM: 'xterm-256color'},
    cwd,
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  child.stdin.end()
  return new Promise((resolve) => child.on('close', (code) => resolve({code: code ?? 1, stdout, stderr})))
}

/** Runs a `--json` command that must succeed and returns its parsed output. */
export async function runCliJson<T = any>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await runCli([...args, '--json'], env)
  if (result.code !== 0) throw new Error(`leads ${args.join(' ')} exited ${result.code}: ${result.stderr}`)
  return JSON.parse(result.stdout) as T
}
