import fs from 'node:fs'
import path from 'node:path'

/** The files SQLite keeps for one database: the file itself and its WAL-mode companions. */
function sqliteFiles(filename: string): string[] {
  return [filename, `${filename}-wal`, `${filename}-shm`]
}

/**
 * The embedded store holds every lead's personal data: its directory is 0700 and its files 0600.
 * A directory is created so; an existing one is tightened only when it is dedicated to the store
 * (holds nothing but its files and the master key), so pointing the store at a shared directory
 * never changes that directory's mode.
 */
export function secureSqliteDirectory(filename: string): void {
  const directory = path.dirname(filename)
  if (!fs.existsSync(directory)) {
    fs.mkdirSync(directory, {recursive: true, mode: 0o700})
    return
  }
  const own = new Set([...sqliteFiles(filename).map((file) => path.basename(file)), 'master.key'])
  if (fs.readdirSync(directory).every((entry) => own.has(entry)) && (fs.statSync(directory).mode & 0o077) !== 0) {
    fs.chmodSync(directory, 0o700)
  }
}

/** Makes the store's files readable by their owner only (SQLite creates them with the umask's mode). */
export function secureSqliteFiles(filename: string): void {
  for (const file of sqliteFiles(filename)) {
    try {
      if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
}
