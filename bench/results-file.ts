/**
 * Where a benchmark's figures go: bench/results/<name>-<start time>.json, and the commit of the
 * checkout that ran them, so a result says which build it measured.
 */
import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

import {ROOT} from './daemon-process.js'

export interface CheckoutCommit {
  commit: string | null
  /** Whether tracked files differ from the commit (null outside a git checkout). */
  dirty: boolean | null
}

/** The commit a checkout is at, and whether its tracked files were changed from it. */
export function checkoutCommit(root: string = ROOT): CheckoutCommit {
  const git = (args: string[]) => execFileSync('git', args, {cwd: root, encoding: 'utf8'}).trim()
  try {
    return {commit: git(['rev-parse', 'HEAD']), dirty: git(['status', '--porcelain', '--untracked-files=no']) !== ''}
  } catch {
    return {commit: null, dirty: null}
  }
}

/** Writes `result` as bench/results/<name>-<startedAt in ISO 8601 basic format>.json; returns the file's path. */
export function writeResults(name: string, startedAt: Date, result: object): string {
  const dir = path.join(ROOT, 'bench/results')
  fs.mkdirSync(dir, {recursive: true})
  // Basic format: no colons in the file name.
  const stamp = startedAt
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  const file = path.join(dir, `${name}-${stamp}.json`)
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
  return file
}
