import {execFileSync} from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/**
 * The path of `command`, installed with apt-get from Debian's `pkg` when this machine lacks it (a
 * fresh CI machine may). apt's own configuration names the package mirror; the lists are
 * refreshed only if the first attempt fails on them.
 */
export function ensureCommand(command: string, pkg = command): string {
  const found = which(command)
  if (found) return found
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg], {
      stdio: 'pipe',
      env: {...process.env, DEBIAN_FRONTEND: 'noninteractive'},
      timeout: 180_000,
    })
  try {
    install()
  } catch {
    execFileSync('apt-get', ['update', '-qq'], {stdio: 'pipe', timeout: 180_000})
    install()
  }
  const installed = which(command)
  if (!installed) throw new Error(`apt-get install ${pkg} left no ${command} binary`)
  return installed
}

function which(command: string): string | null {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    if (fs.existsSync(path.join(dir, command))) return path.join(dir, command)
  }
  return null
}
