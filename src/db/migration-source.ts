import fs from 'node:fs'
import path from 'node:path'
import {pathToFileURL} from 'node:url'

import type {Knex} from 'knex'

const MIGRATION_FILE = /^\d{14}_[a-z0-9_]+\.js$/

/**
 * Reads compiled migrations (YYYYMMDDHHMMSS_verb_noun.js) from one folder and imports them as
 * ES modules; knex's own loader guesses the module type from file names, which breaks under ESM.
 * Names are reported without the extension so the record does not depend on the build.
 */
export function migrationSource(directory: string): Knex.MigrationSource<string> {
  return {
    async getMigrations() {
      return fs
        .readdirSync(directory)
        .filter((file) => MIGRATION_FILE.test(file))
        .sort()
    },
    getMigrationName(file) {
      return file.replace(/\.js$/, '')
    },
    async getMigration(file) {
      return import(pathToFileURL(path.join(directory, file)).href) as Promise<Knex.Migration>
    },
  }
}
