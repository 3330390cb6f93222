import {Args} from '@oclif/core'

import {isoTimeOrNull} from '../../src/shared/clock.js'
import {BaseCommand, confirmFlags} from '../_shared/base-command.js'
import {type KeyOutput, keyOutput} from '../_shared/key-output.js'

type RevokeOutput = KeyOutput & {revoked_at: string | null; already_revoked: boolean}

export default class KeysRevoke extends BaseCommand {
  static override description = `Revoke a key; every daemon refuses it within 5 seconds

Revoking a key that is already revoked changes nothing: it says when the key was revoked and exits 0, without asking, so a script can run it again safely.`
  static override examples = [
    '<%= config.bin %> keys revoke 0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f',
    '<%= config.bin %> keys revoke 0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f --yes',
  ]
  static override args = {
    keyId: Args.string({description: 'key id (UUID)', required: true}),
  }
  static override flags = {...confirmFlags}

  async run(): Promise<RevokeOutput> {
    const {args, flags} = await this.parse(KeysRevoke)
    const {key, alreadyRevoked} = await this.withServices(['keys'], async (services) => {
      const found = await services.keys.get(args.keyId)
      // Nothing left to confirm for a key already revoked: the answer is that it is.
      if (found.revokedAt === null) {
        await this.confirm(`Revoke key ${found.id}? Every daemon refuses it within 5 s, and it cannot be undone.`, flags.yes)
      }
      return services.keys.revoke(found.id)
    })
    const output = {...keyOutput(key), revoked_at: isoTimeOrNull(key.revokedAt), already_revoked: alreadyRevoked}
    this.log(
      alreadyRevoked
        ? `Key ${output.id} was already revoked at ${output.revoked_at}; nothing changed.`
        : `Revoked key ${output.id}. Daemons refuse it within 5 s.`,
    )
    return output
  }
}
