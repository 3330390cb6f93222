import {BaseCommand, confirmFlags} from '../_shared/base-command.js'

export default class MaintenanceAdoptMasterKey extends BaseCommand {
  static override description = [
    "Make LEADS_MASTER_KEY the key this database's webhook secrets are sealed with, after the old one was lost",
    '',
    'Daemons and commands refuse a master key other than the one the database adopted, so nothing ' +
      'is sealed that the daemons cannot open. Only when that key is lost: run this with the new ' +
      'key, start every daemon with it, then rotate every webhook secret (the old ones no longer ' +
      'open, so their deliveries fail until then) and tell clients to restart `leads pull` with ' +
      '--reset (list cursors are signed with the key).',
  ].join('\n')
  static override examples = ['LEADS_MASTER_KEY=… <%= config.bin %> maintenance adopt-master-key --yes']
  static override flags = {...confirmFlags}

  async run(): Promise<{adopted: true}> {
    const {flags} = await this.parse(MaintenanceAdoptMasterKey)
    await this.confirm('Adopt this LEADS_MASTER_KEY? Webhook secrets sealed under the old key will not open: every webhook must be rotated.', flags.yes)
    await this.withServices(['adoptMasterKey'], (services) => services.adoptMasterKey())
    this.log('Adopted this LEADS_MASTER_KEY. Start every daemon with it, then rotate each webhook secret: `leads webhooks rotate-secret <id> --yes`.')
    return {adopted: true}
  }
}
