import {Args, Flags} from '@oclif/core'

import {isoTime} from '../../src/shared/clock.js'
import {MAX_ROTATION_GRACE_MS, MAX_ROTATION_GRACE_TEXT} from '../../src/keys/keys-service.js'
import {parseDuration} from '../../src/shared/duration.js'
import {ValidationError} from '../../src/shared/errors.js'
import {renderSecretOnce} from '../../src/ui/render.js'
import {BaseCommand, confirmFlags} from '../_shared/base-command.js'
import {type KeyOutput, keyOutput} from '../_shared/key-output.js'

export default class KeysRotate extends BaseCommand {
  static override description = 'Mint a new token for a key (same id, customer and scopes); the old token stops at once (asks first), or after --grace'
  static override examples = ['<%= config.bin %> keys rotate 2b6e... --grace 1h', '<%= config.bin %> keys rotate 2b6e... --yes']
  static override args = {
    keyId: Args.string({description: 'key id (UUID)', required: true}),
  }
  static override flags = {
    grace: Flags.string({description: `keep the old token working this long, e.g. 1h, at most ${MAX_ROTATION_GRACE_TEXT}; default: stop it now`}),
    ...confirmFlags,
  }

  async run(): Promise<KeyOutput & {token: string; previous_token_retires_at: string}> {
    const {args, flags} = await this.parse(KeysRotate)
    const graceMs = flags.grace === undefined ? 0 : parseDuration(flags.grace, 'grace')
    if (graceMs > MAX_ROTATION_GRACE_MS) {
      throw new ValidationError(
        `grace must be at most ${MAX_ROTATION_GRACE_TEXT}, got "${flags.grace!.trim()}"`,
        'grace',
        'the old token keeps working all that time; give the client the new token within 30 days',
      )
    }
    // Without a grace period every client still holding the old token fails from now on.
    if (graceMs === 0) {
      await this.confirm(
        `Rotate key ${args.keyId}? Its current token stops working now (--grace keeps it working for a while).`,
        flags.yes,
        'add --yes to confirm, or --grace 1h to keep the old token working meanwhile',
      )
    }
    const rotated = await this.withServices(['keys'], (services) => services.keys.rotate(args.keyId, graceMs))
    const output = {
      ...keyOutput({...rotated.key, previousTokensRetireAt: rotated.previousTokensRetireAt}),
      token: rotated.token,
      previous_token_retires_at: isoTime(rotated.previousTokensRetireAt),
    }
    if (!this.jsonEnabled()) {
      await renderSecretOnce(
        {
          title: 'New API token',
          secret: rotated.token,
          details: [
            ['key id', output.id],
            ['old token', graceMs === 0 ? 'stopped working now' : `works until ${output.previous_token_retires_at}`],
          ],
        },
        this.interactive,
      )
    }
    return output
  }
}
