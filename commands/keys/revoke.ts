import {Args} from '@oclif/core'

import {BaseCommand} from '../_shared/base-command.js'
import {type KeyOutput, keyOutput} from '../_shared/key-output.js'

export default class KeysRevoke extends BaseCommand {
  static override description = 'Revoke a key; every daemon refuses it within 5 seconds'
  static override args = {
    keyId: Args.string({description: 'key id (UUID)', required: true}),
  }

  async run(): Promise<KeyOutput> {
    const {args} = await this.parse(KeysRevoke)
    const key = keyOutput(await this.withServices((services) => services.keys.revoke(args.keyId)))
    this.log(`Revoked key ${key.id}. Daemons refuse it within 5 s.`)
    return key
  }
}
