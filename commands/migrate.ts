import fs from 'node:fs'

import {Flags} from '@oclif/core'

import {loadConfig} from '../src/config/config.js'
import {findEmbeddedDatabase} from '../src/config/database-location.js'
import {unreachableDatabaseError} from '../src/db/database-errors.js'
import {createDb, knownMigrations, pingDatabase} from '../src/db/knex.js'
import {migrateLatest, type MigrationStatus, migrationStatus} from '../src/db/migrate.js'
import {requireWritableServer} from '../src/db/writable.js'
import {renderTable} from '../src/ui/render.js'
import {BaseCommand, tableFlags} from './_shared/base-command.js'

export default class Migrate extends BaseCommand {
  static override description = 'Run pending database migrations, or list them with --status'
  static override examples = [
    '<%= config.bin %> migrate',
    '<%= config.bin %> migrate --status',
    'LEADS_DATABASE_URL=mysql://leads:secret@db:3306/leads LEADS_MASTER_KEY=... <%= config.bin %> migrate',
  ]
  static override flags = {
    ...tableFlags,
    status: Flags.boolean({description: 'list migrations and whether each has run; change nothing'}),
  }

  async run(): Promise<{applied: string[]} | {migrations: MigrationStatus[]}> {
    const {flags} = await this.parse(Migrate)
    // The embedded database the daemon uses when there is one above; otherwise migrate creates it here.
    const config = loadConfig(process.env)
    const {database} = findEmbeddedDatabase(config, process.cwd()) ?? config
    // --status changes nothing: where there is no store yet, opening one would create it.
    if (flags.status && database.client === 'sqlite' && database.filename !== ':memory:' && !fs.existsSync(database.filename)) {
      const migrations = (await knownMigrations()).map((name) => ({name, applied: false}))
      if (!this.jsonEnabled()) {
        await this.statusTable(migrations, flags)
        process.stderr.write(`no database at ${database.filename} yet: \`leads migrate\` or the daemon creates it\n`)
      }
      return {migrations}
    }
    const db = createDb(database)
    try {
      // The first command run against a new server: a server that does not answer, refused
      // credentials or a missing database get the same one line and hint as every other command.
      await pingDatabase(db).catch((error: unknown) => {
        throw unreachableDatabaseError(error, database)
      })
      if (flags.status) {
        const migrations = await migrationStatus(db)
        if (!this.jsonEnabled()) await this.statusTable(migrations, flags)
        return {migrations}
      }
      // Migrating a replica would break its replication: the schema is the primary's to change.
      await requireWritableServer(db)
      const applied = await migrateLatest(db)
      if (!this.jsonEnabled()) this.log(applied.length === 0 ? 'Already up to date.' : `Applied ${applied.join(', ')}`)
      return {applied}
    } finally {
      await db.destroy()
    }
  }

  private async statusTable(migrations: MigrationStatus[], flags: Parameters<BaseCommand['tableDisplay']>[0]): Promise<void> {
    await renderTable(
      [
        {header: 'MIGRATION', kind: 'id', value: (m: MigrationStatus) => m.name},
        {header: 'STATE', kind: 'short', value: (m) => (m.applied ? 'applied' : 'pending'), color: (m) => (m.applied ? 'green' : 'yellow')},
      ],
      migrations,
      'No migrations.',
      this.tableDisplay(flags),
    )
  }
}
