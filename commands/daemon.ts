import {loadConfig} from '../src/config/config.js'
import {createLogger, logDestination} from '../src/log/logger.js'
import {Flags} from '@oclif/core'

import {type Role, ROLES, startDaemon, stopOnSignals} from '../daemon/server.js'
import {BaseCommand} from './_shared/base-command.js'

export default class Daemon extends BaseCommand {
  static override description = `Serve the lead API (migrates the embedded SQLite store on start)

Logs go to stdout: at a terminal as lines for people (time, level, message, fields), anywhere else as JSON lines, one per event (pipe through cat to see the JSON at a terminal).`
  static override enableJsonFlag = false
  static override examples = ['<%= config.bin %> daemon', 'LEADS_PORT=9000 <%= config.bin %> daemon', '<%= config.bin %> daemon --role worker']
  static override flags = {
    role: Flags.string({description: 'api: serve HTTP; worker: deliver webhooks; all: both', options: [...ROLES], default: 'all'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Daemon)
    const config = loadConfig(process.env)
    const logger = createLogger(config.logLevel, await logDestination())
    const role = flags.role as Role
    const daemon = await startDaemon(config, logger, {role})
    if (role === 'worker') logger.info({probes: daemon.url, database: config.database.client, redis: config.redis?.mode ?? false}, 'delivering webhooks')
    else logger.info({url: daemon.url, role, database: config.database.client, redis: config.redis?.mode ?? false}, 'listening')
    if (role !== 'worker' && (process.stderr.isTTY || config.database.client === 'sqlite')) {
      process.stderr.write(
        `\nleads daemon listening on ${daemon.url} (database: ${config.database.client === 'sqlite' ? config.database.filename : 'mysql'})\n` +
          'Next, in another terminal:\n' +
          '  npx leads customers create --name "Acme Realty"\n' +
          '  npx leads keys issue --customer <customer id> --scope public_api:leads:read\n' +
          `  curl -H "Authorization: Bearer <token>" -H "x-customer-id: <customer id>" ${daemon.url}/api/agents/crm/leads\n\n`,
      )
    }
    await stopOnSignals(daemon, logger)
  }
}
