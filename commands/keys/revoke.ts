import {Args} from '@oclif/core'

import {BaseCommand, confirmFlags} from '../_shared/base-command.js'
import {type KeyOutput, keyOutput} from '../_shared/key-output.js'

export default class KeysRevoke extends BaseCommand {
  static override description = 'Revoke a key; every daemon refuses it within 5 seconds'
  static override examples = [
    '<%= config.bin %> keys revoke 0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f',
    '<%= config.bin %> keys revoke 0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f --yes',
  ]
  static override args = {
    keyId: Args.string({description: 'key id (UUID)', required: true}),
  }
  static override flags = {...confirmFlags}

  async run(): Promise<KeyOutput> {
    const {args, flags} = await this.parse(KeysRevoke)
    await this.confirm(`Revoke key ${args.keyId}? Every daemon refuses it within 5 s, and it cannot be undone.`, flags.yes)
    const key = keyOutput(await this.withServices(['keys'], (services) => services.keys.revoke(args.keyId)))
    this.log(`Revoked key ${key.id}. Daemons refuse it within 5 s.`)
    return key
  }
}
